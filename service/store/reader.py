"""The event store as a worker reads it: the current generation's snapshot, mapped, sorted by time.

A worker serves queries from an immutable `EventFrames`. Sorting by `ts` lets the engine cut any
time window out of a table with two binary searches and a zero-copy slice; dimension columns are
Enums over their values (snapshot: not necessarily in string order), so grouping and filtering work on integer codes.

The frames come from the generation's snapshot (`snapshot`): segment files written at landing time that
every process maps, so the events are in memory once per machine, not once per worker, and a
worker is ready as soon as the files are mapped (no parse, no sort). A store without a snapshot
for its generation (written by hand, or before snapshots existed) is read from its Parquet
partitions into private frames, as before, with a warning; the next landing writes the snapshot.

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
import functools
import logging
import threading
import time
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import cast

import polars as pl

from service.store import encoding, layout, schema, snapshot, snapshot_reading

log = logging.getLogger(__name__)

@dataclasses.dataclass(frozen=True, eq=False)
class EventFrames:
    """One consistent view of both event tables (compared and hashed by identity)."""

    suppressions: pl.DataFrame      # stored schema, sorted by ts; dimension columns Enum (encoding.encode)
    keyword_changes: pl.DataFrame   # same
    generation: int                 # data generation the frames were loaded at
    last_event: datetime | None     # max ts over both tables; None when both are empty
    # Per table: UTC date -> the last generation that landed a file for it (0: unknown/never).
    versions: Mapping[str, Mapping[date, int]] = dataclasses.field(default_factory=dict)
    # The cost index's day spans (`day_spans`), when the snapshot carries them; else built on use.
    spans: Mapping[str, pl.DataFrame] | None = None
    # The snapshot's directory, when the frames are a mapped snapshot: facts derived from it once
    # per machine may be kept there (engine/polars/user_keys.py).
    directory: Path | None = None

    @functools.cached_property
    def first_event(self) -> datetime | None:
        """The first event over both tables (None without data): where the earliest window may start."""
        # A Datetime column's min is a datetime (the stubs say any value).
        firsts = [cast(datetime, frame.get_column("ts").min())
                  for frame in (self.suppressions, self.keyword_changes) if frame.height]
        return min(firsts) if firsts else None


class GenerationMoved(Exception):
    """The snapshot of the generation being loaded is gone: a newer one was published meanwhile."""


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
        return encoding.encode(pl.DataFrame(schema=schema.SCHEMAS[table]), table)
    # One scan per file, each cast before concatenation, so files written with slightly different
    # physical types (ns timestamps, Int64 ids) still line up. One global sort at the end is
    # cheaper than sorting per partition and trusting that partitions never overlap.
    stored = schema.SCHEMAS[table]
    scans = [
        pl.scan_parquet(path, hive_partitioning=False).select(pl.col(c).cast(t) for c, t in stored.items())
        for path in files
    ]
    return encoding.encode(pl.concat(scans).collect(), table)


def prepare_table(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """An in-memory table (stored schema) in the shape the reader serves: encoded and sorted."""
    return encoding.encode(frame, table)


def _last_ts(frame: pl.DataFrame) -> datetime | None:
    # Sorted by ts, so the last row holds the maximum.
    return frame.get_column("ts")[-1] if frame.height else None


def build_frames(suppressions: pl.DataFrame, keyword_changes: pl.DataFrame, generation: int) -> EventFrames:
    """Snapshot from two tables already in (or castable to) the stored schema."""
    suppressions = prepare_table(suppressions, schema.SUPPRESSIONS)
    keyword_changes = prepare_table(keyword_changes, schema.KEYWORD_CHANGES)
    return _frames(suppressions, keyword_changes, generation)


def _frames(suppressions: pl.DataFrame, keyword_changes: pl.DataFrame, generation: int,
            versions: Mapping[str, Mapping[date, int]] | None = None,
            spans: Mapping[str, pl.DataFrame] | None = None, directory: Path | None = None) -> EventFrames:
    ends = [ts for ts in (_last_ts(suppressions), _last_ts(keyword_changes)) if ts is not None]
    return EventFrames(
        suppressions=suppressions,
        keyword_changes=keyword_changes,
        generation=generation,
        last_event=max(ends) if ends else None,
        versions=versions or {},
        spans=spans,
        directory=directory,
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


def load_frames(data_dir: Path, generation: int, cache: snapshot_reading.SegmentCache | None = None) -> EventFrames:
    """Both tables as of `generation`: its snapshot, mapped (segments already in `cache` reused);
    without one, read from the Parquet partitions of generations up to it. Raises GenerationMoved
    when the snapshot went away because a newer generation was published (the caller reads
    GENERATION again)."""
    directory = snapshot.snapshot_dir(data_dir, generation)
    try:
        tables, spans, meta = snapshot_reading.read(directory, cache)
    except FileNotFoundError:
        if layout.read_generation(data_dir) != generation:
            raise GenerationMoved(generation) from None
    else:
        return _frames(tables[schema.SUPPRESSIONS], tables[schema.KEYWORD_CHANGES], generation,
                       snapshot_reading.read_versions(meta), spans, directory)
    if generation:
        log.warning(
            "no snapshot of generation %d in %s: reading its Parquet partitions into this process "
            "(memory per process, slow start); the next landing writes one", generation, data_dir,
        )
    return read_partitions(data_dir, generation)


def read_partitions(data_dir: Path, generation: int) -> EventFrames:
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


_LOAD_ATTEMPTS = 5


class EventStore:
    """Lazily loaded, generation-following holder of the current `EventFrames` snapshot."""

    def __init__(self, data_dir: Path, *, check_interval: float = 1.0) -> None:
        self._data_dir = Path(data_dir)
        self._check_interval = check_interval
        self._lock = threading.Lock()
        self._frames: EventFrames | None = None
        self._next_check = 0.0
        # Segments mapped for the current generation: a new generation reuses the files it shares.
        self._segments = snapshot_reading.SegmentCache()

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

    def follow(self, stop: threading.Event) -> None:
        """Check for a new generation every `check_interval` seconds until `stop` is set (a web
        worker runs this in a thread): an idle process then lets go of a replaced generation's
        mapped files too, instead of holding them until its next request."""
        while not stop.wait(self._check_interval):
            try:
                self.snapshot()
            except Exception:  # the next round retries; requests keep the snapshot they have
                log.exception("following the data generation failed")

    def _load(self) -> EventFrames:
        # Read the generation before the files, and take only files up to it: a landing published
        # during the load is left out whole, and the next check picks it up. When the snapshot of
        # the generation read was replaced meanwhile, read GENERATION again.
        for attempt in range(_LOAD_ATTEMPTS):
            generation = layout.read_generation(self._data_dir)
            self._segments.begin()
            try:
                frames = load_frames(self._data_dir, generation, self._segments)
                break
            except GenerationMoved:
                if attempt == _LOAD_ATTEMPTS - 1:
                    raise
        self._segments.keep_used()  # let go of the replaced generation's own segments
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
