"""Where things live in the data directory, and the data generation number.

    <data>/suppressions/date=YYYY-MM-DD/part-g<generation>-<id>.parquet
    <data>/keyword_changes/date=YYYY-MM-DD/part-g<generation>-<id>.parquet
    <data>/GENERATION            one integer; bumped after every successful ingest
    <data>/quarantine/           rejected rows, with reasons
    <data>/.staging/             files being written (never read by the service)

Writers stage every file, rename them into place, then bump GENERATION (also by rename).
Readers reload when GENERATION changes (a worker that starts in the middle of an ingest may
see part of it until the bump, moments later, makes it reload). A file's name carries the generation that landed it, so
a reader knows, for every date, which generation last changed it: the privacy stage keys its
noise on that (a cell's noise changes exactly when its data may have). One writer at a time.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

GENERATION_FILE = "GENERATION"


def table_dir(data_dir: Path, table: str) -> Path:
    return Path(data_dir) / table


def partition_dir(data_dir: Path, table: str, day: str) -> Path:
    return table_dir(data_dir, table) / f"date={day}"


_GENERATION_IN_NAME = re.compile(r"^part-g(\d+)-")


def partition_file_name(generation: int, unique: str) -> str:
    return f"part-g{generation:08d}-{unique}.parquet"


def file_generation(path: Path) -> int:
    """The generation that landed a partition file; 0 for files named otherwise (older layouts)."""
    match = _GENERATION_IN_NAME.match(Path(path).name)
    return int(match.group(1)) if match else 0


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


def bump_generation(data_dir: Path) -> int:
    """Atomically increment the generation number and return the new value."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    new = read_generation(data_dir) + 1
    fd, tmp = tempfile.mkstemp(dir=data_dir, prefix=".generation-")
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{new}\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, data_dir / GENERATION_FILE)
    return new
