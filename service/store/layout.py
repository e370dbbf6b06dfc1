"""Where things live in the data directory, and the data generation number.

    <data>/suppressions/date=YYYY-MM-DD/part-g<generation>-<id>.parquet
    <data>/keyword_changes/date=YYYY-MM-DD/part-g<generation>-<id>.parquet
    <data>/GENERATION            one integer: the last published generation
    <data>/generations/g<generation>.json   what each landing wrote, and the source files' hashes
    <data>/quarantine/           rejected rows, with reasons
    <data>/.staging/             files being written (never read by the service)
    <data>/.lock                 held (flock) by the one writer at a time

A generation is all-or-nothing: its files carry its number in their names, and readers take only
files of generations up to GENERATION, so files of a landing that has not been published yet
(or never will be: a writer killed half-way) are invisible until GENERATION reaches them. Writers
stage every file, record the generation's manifest, rename the files into place, then publish
the generation by writing GENERATION (by rename). Leftovers of an unfinished generation are
removed by the next writer (`leftovers.sweep`). A file's name also tells a reader, for every date,
which generation last changed it: the privacy stage keys its noise on that (a cell's noise
changes exactly when its data may have). Files named otherwise (placed by hand, as the test
fixtures do) count as generation 0: always visible, never swept.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

GENERATION_FILE = "GENERATION"
LOCK_FILE = ".lock"


def table_dir(data_dir: Path, table: str) -> Path:
    return Path(data_dir) / table


def partition_dir(data_dir: Path, table: str, day: str) -> Path:
    return table_dir(data_dir, table) / f"date={day}"


_GENERATION_IN_NAME = re.compile(r"^part-g(\d+)-")


def partition_file_name(generation: int, unique: str) -> str:
    return f"part-g{generation:08d}-{unique}.parquet"


def file_generation(path: Path) -> int:
    """The generation that landed a partition file; 0 for files named otherwise (placed by hand)."""
    match = _GENERATION_IN_NAME.match(Path(path).name)
    return int(match.group(1)) if match else 0


def generations_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "generations"


_MANIFEST_NAME = re.compile(r"^g(\d+)\.json$")


def manifest_path(data_dir: Path, generation: int) -> Path:
    return generations_dir(data_dir) / f"g{generation:08d}.json"


def manifest_generation(path: Path) -> int | None:
    """The generation a manifest file describes; None for other names."""
    match = _MANIFEST_NAME.match(Path(path).name)
    return int(match.group(1)) if match else None


def quarantine_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "quarantine"


def staging_dir(data_dir: Path) -> Path:
    return Path(data_dir) / ".staging"


def read_generation(data_dir: Path) -> int:
    """The current data generation; 0 when nothing was ever ingested."""
    try:
        return int((Path(data_dir) / GENERATION_FILE).read_text().strip() or 0)
    except FileNotFoundError:
        return 0


def write_generation(data_dir: Path, generation: int, *, before_publishing: Callable[[], None] | None = None) -> None:
    """Publish `generation` atomically: a temporary file in the staging directory, fsynced, then
    renamed over GENERATION. `before_publishing` runs between the two (progress, tests)."""
    data_dir = Path(data_dir)
    staging = staging_dir(data_dir)
    staging.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=staging, prefix="GENERATION-")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{generation}\n")
            handle.flush()
            os.fsync(handle.fileno())
        if before_publishing is not None:
            before_publishing()
        os.replace(tmp, data_dir / GENERATION_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
