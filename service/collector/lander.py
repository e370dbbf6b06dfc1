"""Landing the collector's log into the store: one round takes the batches in the log, drops the
events that are already in the store, and lands the rest as one generation with their index file.

A round, under the store's writer lock (the same lock as `data ingest`: one writer at a time):

1. sweep what a landing cut short left (its rows and its index file go together: `index`);
2. batches the index names as landed are removed from the log (a lander killed after publishing
   but before removing them), nothing is stored again;
3. the other batches (oldest first, up to `max_events`) are read; an event whose id is in the
   index, or came earlier in this round, is a duplicate: counted and dropped;
4. the rest land as one generation (`LandingTarget.write_tables`: a new Parquet generation on the
   polars engine; on ClickHouse one insert per table, carrying a deduplication token made of the
   round's batch names and the generation, published as a generation), the round's index file
   with them, in the same all-or-nothing step;
5. the batch files are removed.

A kill at any point either leaves the generation unpublished (swept next round; the batches are
still in the log and land again) or published with its index (the batches are recognised as
landed and removed). No event lands twice, none is lost.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from service.collector import log as event_log
from service.collector.index import LandedIndex, new_segment_path, segment_bytes
from service.store import schema
from service.store.target import LandingTarget

log = logging.getLogger(__name__)

MAX_EVENTS_PER_ROUND = 2_000_000  # bounds the lander's memory; a larger backlog takes several rounds


@dataclasses.dataclass(frozen=True)
class Round:
    batches: int = 0  # batch files consumed (landed now, or found landed already)
    landed: int = 0  # events stored
    duplicates: int = 0  # events dropped as already landed (or repeated within the round)
    generation: int | None = None  # the generation published, if any
    seconds: float = 0.0
    newest: dt.datetime | None = None  # the newest event time among those landed
    already_landed: int = 0  # batch files a previous round had landed (removed now)


def land_once(data_dir: Path, target: LandingTarget, index: LandedIndex, *, now: dt.datetime,
              max_events: int = MAX_EVENTS_PER_ROUND,
              on_stage: Callable[[str, int, int], None] | None = None) -> Round:
    """One landing round (module docstring). `index` must have been loaded from `data_dir`."""
    started = time.perf_counter()
    data_dir = Path(data_dir)
    with target.lock():
        swept = target.sweep()
        if swept.removed:
            index.load()  # an index file of an unpublished generation may have just been removed
        found = event_log.batches(data_dir)
        done = [batch.name for batch in found if batch.name in index.batches]
        event_log.remove(data_dir, done)
        todo, total = [], 0
        for batch in found:
            if batch.name in index.batches:
                continue
            if todo and total + batch.events > max_events:
                break
            todo.append(batch)
            total += batch.events
        if not todo:
            return Round(batches=len(done), already_landed=len(done), seconds=time.perf_counter() - started)
        frames_read = []
        for batch in list(todo):
            try:
                frames_read.append(event_log.read(data_dir, batch))
            except (OSError, pl.exceptions.PolarsError) as exc:
                # Written whole and fsynced before its 202, a batch is unreadable only when the disk
                # failed it: set it aside for the operator rather than stop every later landing.
                todo.remove(batch)
                aside = event_log.set_aside(data_dir, batch)
                log.error("batch %s of the log cannot be read (%s); moved to %s, the other batches land",
                          batch.name, exc, aside)
        if not frames_read:
            return Round(batches=len(done), already_landed=len(done), seconds=time.perf_counter() - started)
        frame = pl.concat(frames_read, how="vertical_relaxed")
        fresh = frame.filter(index.known(frame.get_column("event_id")).not_()
                             ).unique(subset="event_id", keep="first", maintain_order=True)
        duplicates = frame.height - fresh.height
        frames = {table: fresh.filter(pl.col("type") == table).select(
                      [pl.col(name).cast(dtype) for name, dtype in schema.SCHEMAS[table].items()])
                  for table in schema.TABLES}
        ids = fresh.select("event_id", "ts")
        segment = new_segment_path(data_dir)
        names = [batch.name for batch in todo]
        token = hashlib.sha256("\n".join(names).encode()).hexdigest()[:32]
        written = target.write_tables({t: f for t, f in frames.items() if f.height}, now=now, on_stage=on_stage,
                                      other_files={segment: segment_bytes(ids, names)}, dedup_token=token)
        index.add(segment, ids, names)
    event_log.remove(data_dir, names)
    newest = fresh.get_column("ts").max() if fresh.height else None
    return Round(batches=len(todo) + len(done), landed=fresh.height, duplicates=duplicates,
                 generation=written.generation, seconds=time.perf_counter() - started,
                 newest=newest, already_landed=len(done))  # type: ignore[arg-type]
