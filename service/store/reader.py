"""The in-memory event store: every Parquet partition loaded once per worker, sorted by time.

A worker serves queries from an immutable `EventFrames` snapshot. Sorting by `ts` lets the engine
cut any time window out of a table with two binary searches and a zero-copy slice; dimension
columns are Categorical so grouping and filtering work on integer codes.

`EventStore` loads lazily: gunicorn forks its workers from a master that must never run polars
(its thread pool does not survive a fork), so nothing is read until the first `snapshot()` call,
which happens inside a worker. Afterwards the store follows the data generation number that
ingest bumps after every successful landing (see `layout`), and swaps in a fresh snapshot when it
changes. Snapshots are never mutated, so a request that holds one keeps a consistent view.

A snapshot holds exactly the generations up to the GENERATION it read: files of a later generation
(a landing not yet published, or one whose writer was killed) are left out, so every worker that
reads the same GENERATION serves the same rows under the same cache keys.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path

import polars as pl

from service.store import layout, schema

log = logging.getLogger(__name__)

@dataclasses.dataclass(frozen=True, eq=False)
class EventFrames:
    """One consistent view of both event tables (compared and hashed by identity)."""

    suppressions: pl.DataFrame      # stored schema, sorted by ts; dimension columns Categorical
    keyword_changes: pl.DataFrame   # same
    generation: int                 # data generation the frames were loaded at
    last_event: datetime | None     # max ts over both tables; None when both are empty
    # Per table: UTC date -> the last generation that landed a file for it (0: unknown/never).
    versions: Mapping[str, Mapping[date, int]] = dataclasses.field(default_factory=dict)


def memory_schema(table: str) -> dict[str, pl.DataType]:
    """The stored schema of `table` with its dimension columns as Categorical."""
    dimensions = schema.DIMENSIONS[table]
    return {
        column: (pl.Categorical() if column in dimensions else dtype)
        for column, dtype in schema.SCHEMAS[table].items()
    }


def _cast(frame: pl.LazyFrame, table: str) -> pl.LazyFrame:
    """Exactly the table's columns in their memory types; other columns (like `date`) are dropped."""
    return frame.select(pl.col(column).cast(dtype) for column, dtype in memory_schema(table).items())


def partition_files(data_dir: Path, table: str, generation: int | None = None) -> list[Path]:
    """Every landed Parquet file of `table` (hidden and underscore files are not data); with
    `generation`, only files of generations up to it (the published ones, see `layout`)."""
    return sorted(
        path
        for path in layout.table_dir(data_dir, table).glob("date=*/*.parquet")
        if not path.name.startswith((".", "_"))
        and (generation is None or layout.file_generation(path) <= generation)
    )


def read_table(data_dir: Path, table: str, generation: int | None = None) -> pl.DataFrame:
    """Load one table from its partitions (up to `generation`, if given); an empty frame of the
    right schema when there are none."""
    files = partition_files(data_dir, table, generation)
    if not files:
        return pl.DataFrame(schema=memory_schema(table))
    # One scan per file, each cast before concatenation, so files written with slightly different
    # physical types (ns timestamps, Int64 ids) still line up. One global sort at the end is
    # cheaper than sorting per partition and trusting that partitions never overlap.
    scans = [_cast(pl.scan_parquet(path, hive_partitioning=False), table) for path in files]
    return pl.concat(scans).sort("ts").collect()


def prepare_table(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """An in-memory table (stored schema) in the shape the reader serves: cast and sorted."""
    return _cast(frame.lazy(), table).sort("ts").collect()


def _last_ts(frame: pl.DataFrame) -> datetime | None:
    # Sorted by ts, so the last row holds the maximum.
    return frame.get_column("ts")[-1] if frame.height else None


def build_frames(suppressions: pl.DataFrame, keyword_changes: pl.DataFrame, generation: int) -> EventFrames:
    """Snapshot from two tables already in (or castable to) the stored schema."""
    suppressions = prepare_table(suppressions, schema.SUPPRESSIONS)
    keyword_changes = prepare_table(keyword_changes, schema.KEYWORD_CHANGES)
    return _frames(suppressions, keyword_changes, generation)


def _frames(suppressions: pl.DataFrame, keyword_changes: pl.DataFrame, generation: int,
            versions: Mapping[str, Mapping[date, int]] | None = None) -> EventFrames:
    ends = [ts for ts in (_last_ts(suppressions), _last_ts(keyword_changes)) if ts is not None]
    return EventFrames(
        suppressions=suppressions,
        keyword_changes=keyword_changes,
        generation=generation,
        last_event=max(ends) if ends else None,
        versions=versions or {},
    )


def date_versions(data_dir: Path, table: str, generation: int | None = None) -> dict[date, int]:
    """For each date partition of `table`, the last generation (up to `generation`, if given)
    that landed a file in it."""
    versions: dict[date, int] = {}
    for path in partition_files(data_dir, table, generation):
        try:
            day = date.fromisoformat(path.parent.name.removeprefix("date="))
        except ValueError:  # not a partition this layout writes; its rows still load
            continue
        versions[day] = max(versions.get(day, 0), layout.file_generation(path))
    return versions


def load_frames(data_dir: Path, generation: int) -> EventFrames:
    """Read both tables as of `generation` (its files and earlier ones) and label the snapshot with it."""
    unpublished = [
        path
        for table in schema.TABLES
        for path in layout.table_dir(data_dir, table).glob("date=*/*.parquet")
        if layout.file_generation(path) > generation
    ]
    if unpublished:
        log.info(
            "left out %d files of generations above %d (a landing in progress, or one cut short)",
            len(unpublished), generation,
        )
    return _frames(
        read_table(data_dir, schema.SUPPRESSIONS, generation),
        read_table(data_dir, schema.KEYWORD_CHANGES, generation),
        generation,
        {table: date_versions(data_dir, table, generation) for table in schema.TABLES},
    )


class EventStore:
    """Lazily loaded, generation-following holder of the current `EventFrames` snapshot."""

    def __init__(self, data_dir: Path, *, check_interval: float = 1.0) -> None:
        self._data_dir = Path(data_dir)
        self._check_interval = check_interval
        self._lock = threading.Lock()
        self._frames: EventFrames | None = None
        self._next_check = 0.0

    @property
    def loaded(self) -> bool:
        return self._frames is not None

    def snapshot(self) -> EventFrames:
        """The current snapshot: loaded on first use, reloaded when the data generation changed.

        The generation file is read at most once per `check_interval` seconds. While one thread
        checks or reloads, other threads keep answering from the snapshot they already have
        instead of queueing behind a reload that can take seconds.
        """
        frames = self._frames
        if frames is None:
            with self._lock:
                if self._frames is None:
                    self._frames = self._load()
                return self._frames
        if time.monotonic() < self._next_check or not self._lock.acquire(blocking=False):
            return frames
        try:
            latest = self._frames or frames  # never None again once loaded
            if time.monotonic() >= self._next_check:
                latest = self._refresh(latest)
                self._frames = latest
            return latest
        finally:
            self._lock.release()

    def _load(self) -> EventFrames:
        # Read the generation before the files, and take only files up to it: a landing published
        # during the load is left out whole, and the next check picks it up.
        generation = layout.read_generation(self._data_dir)
        frames = load_frames(self._data_dir, generation)
        self._next_check = time.monotonic() + self._check_interval
        log.info(
            "event store loaded: generation %d, %d suppressions, %d keyword changes",
            generation, frames.suppressions.height, frames.keyword_changes.height,
        )
        return frames

    def _refresh(self, current: EventFrames) -> EventFrames:
        try:
            if layout.read_generation(self._data_dir) != current.generation:
                return self._load()
        except Exception:
            # Keep serving the last good snapshot; the next check retries.
            log.exception("event store reload failed; serving generation %d", current.generation)
        self._next_check = time.monotonic() + self._check_interval
        return current
