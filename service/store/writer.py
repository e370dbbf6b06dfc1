"""Landing event rows in the store: stage, rename into place, bump the generation once.

Every file is first written completely under `layout.staging_dir` (same file system as the
partitions, so the rename is atomic), fsynced, and only then renamed to
`<table>/date=YYYY-MM-DD/part-<uuid4 hex>.parquet`. Readers never see a half-written file. If
anything fails before the renames, the staged files are removed and nothing becomes visible; if a
rename fails, the files already renamed by this call are removed again. The generation is bumped
once, after the last rename, so readers that follow it pick up all files of a call together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import polars as pl

from service.store import layout, schema

COMPRESSION = "zstd"


@dataclasses.dataclass(frozen=True)
class WriteResult:
    paths: tuple[Path, ...]  # the landed partition files
    generation: int | None  # the new generation; None when there was nothing to write


def check_schema(table: str, frame: pl.DataFrame) -> None:
    """Raise ValueError unless `frame` has exactly the stored columns, order and types."""
    expected = schema.SCHEMAS[table]
    actual = dict(frame.schema)
    if actual != expected:
        raise ValueError(f"frame for {table} does not have the stored schema: expected {expected}, got {actual}")


def write_events(data_dir: Path, table: str, frame: pl.DataFrame) -> list[Path]:
    """Land the rows of one table (stored schema) and bump the generation once."""
    return list(write_tables(data_dir, {table: frame}).paths)


def write_tables(
    data_dir: Path,
    frames: Mapping[str, pl.DataFrame],
    *,
    on_file: Callable[[], None] | None = None,
) -> WriteResult:
    """Land rows of one or both tables together: one file per table and UTC day, one bump.

    `on_file` is called after each staged file (for progress bars). An empty call writes
    nothing and leaves the generation alone.
    """
    data_dir = Path(data_dir)
    for table, frame in frames.items():
        if table not in schema.SCHEMAS:
            raise ValueError(f"unknown table {table!r}")
        check_schema(table, frame)
    if not any(frame.height for frame in frames.values()):
        return WriteResult((), None)

    staging = layout.staging_dir(data_dir)
    staging.mkdir(parents=True, exist_ok=True)
    planned: list[tuple[Path, Path]] = []  # (staged, final)
    generation = layout.read_generation(data_dir) + 1  # the one the bump below makes (one writer at a time)
    try:
        for table, frame in frames.items():
            for day, rows in _split_by_day(frame):
                name = uuid.uuid4().hex
                staged = staging / f"{table}-{day}-{name}.parquet"
                final = layout.partition_dir(data_dir, table, day) / layout.partition_file_name(generation, name)
                planned.append((staged, final))
                _write_staged(rows, staged)
                if on_file is not None:
                    on_file()
    except BaseException:
        for staged, _final in planned:
            staged.unlink(missing_ok=True)
        raise

    landed: list[Path] = []
    try:
        for staged, final in planned:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, final)
            landed.append(final)
    except BaseException:
        for path in landed:
            path.unlink(missing_ok=True)
        for staged, _final in planned:
            staged.unlink(missing_ok=True)
        raise
    for directory in {final.parent for final in landed}:
        _fsync_dir(directory)
    try:
        generation = layout.bump_generation(data_dir)
    except BaseException:
        # Not announced, so not landed: readers reloading for another reason must not find them.
        for path in landed:
            path.unlink(missing_ok=True)
        raise
    return WriteResult(tuple(landed), generation)


def _split_by_day(frame: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """(YYYY-MM-DD, rows sorted by ts) per UTC day, oldest first.

    One sort of the whole frame, then zero-copy slices between day boundaries: cheaper than
    grouping and sorting each day on its own.
    """
    if frame.height == 0:
        return []
    ordered = frame.sort("ts")
    days = ordered.get_column("ts").dt.date()
    boundaries = days.search_sorted(days.unique(maintain_order=True), side="left").to_list() + [ordered.height]
    return [
        (str(days[start]), ordered.slice(start, end - start))
        for start, end in zip(boundaries[:-1], boundaries[1:], strict=True)
    ]


def _write_staged(frame: pl.DataFrame, path: Path) -> None:
    frame.write_parquet(path, compression=COMPRESSION, statistics=True)
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    # Makes the renames durable; some platforms cannot open directories, which is fine.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
