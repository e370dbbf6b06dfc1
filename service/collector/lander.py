"""Landing the collector's log into the store: one round takes the batches in the log (and the held
events of hours that have ended), drops the events that are already in the store, and lands the
rest as one generation with their index file.

Events of the hour that is still running are held, not landed, until it ends (`log` module
docstring: a landing changes the noise of its dates, so the running hour, which no answer counts
yet, must not change today's noise every round). They land in the first round after their hour
ends: an hour's events are in the answers within SIGNALS_LANDER_INTERVAL_SECONDS (and the round's
own time) after the hour ends, when `as_of` moves to it, and precompute starts from there. Late
events (of hours already ended, within SIGNALS_LATE_HOURS) land in the next round.

A round, under the store's writer lock (the same lock as `data ingest`: one writer at a time):

1. sweep what a landing cut short left (its rows and its index file go together: `index`);
2. batches and held files the index names as landed are removed (a lander killed after publishing
   but before removing them), nothing is stored again;
3. the other batches and the held files of ended hours (oldest first, up to `max_events`) are
   read; a batch's events of the running hour are written to the held area (the same file again
   if the round is repeated); an event whose id is in the index, or came earlier in this round,
   is a duplicate: counted and dropped;
4. the rest land as one generation (`LandingTarget.write_tables`: a new Parquet generation on the
   polars engine; on ClickHouse one insert per table, carrying a deduplication token made of the
   round's batch names and the generation, published as a generation), the round's index file
   with them, in the same all-or-nothing step;
5. the batch files and held files are removed.

A kill at any point either leaves the generation unpublished (swept next round; the batches are
still in the log and land again, their held part is written again under the same names) or
published with its index (the batches are recognised as landed and removed). No event lands
twice, none is lost.

With the RabbitMQ carrier (SIGNALS_COLLECTOR_LOG=amqp://..., service/collector/carrier.py) the
batches come as messages, not files: `carried`, landed from memory in the same round, the same way
(held part written first, duplicates dropped by the index, the message's id as the batch's name in
the index). The caller acknowledges the round's `Round.carried` to the broker only after
`land_once` returned, so a kill before that has the broker deliver them again: a redelivered batch
the index names as landed is consumed without landing anything, and any of its events that landed
under another name are dropped by their ids.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import io
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import polars as pl

from service.api.windows import floor_hour
from service.collector import log as event_log
from service.collector.index import LandedIndex, new_segment_path, segment_bytes
from service.store import schema
from service.store.target import LandingTarget

log = logging.getLogger(__name__)

MAX_EVENTS_PER_ROUND = 2_000_000  # bounds the lander's memory; a larger backlog takes several rounds


@dataclasses.dataclass(frozen=True, eq=False)
class Carried:
    """A batch delivered by the broker (the RabbitMQ carrier): its name (the message's id), its rows
    as Arrow IPC bytes, and the broker's delivery tag (what the caller acknowledges)."""

    batch: event_log.Batch
    body: bytes
    tag: int = 0

    @property
    def name(self) -> str:
        return self.batch.name

    @property
    def events(self) -> int:
        return self.batch.events


@dataclasses.dataclass(frozen=True)
class Round:
    batches: int = 0  # batch files consumed (landed now, or found landed already)
    landed: int = 0  # events stored
    duplicates: int = 0  # events dropped as already landed (or repeated within the round)
    generation: int | None = None  # the generation published, if any
    seconds: float = 0.0
    newest: dt.datetime | None = None  # the newest event time among those landed
    already_landed: int = 0  # batch files a previous round had landed (removed now)
    held: int = 0  # events of the running hour moved from the log to the held area
    more: bool = False  # the round stopped at max_events: more is waiting
    carried: tuple[Carried, ...] = ()  # the carried batches this round consumed (landed, or landed before)


def _carried_frame(item: Carried) -> pl.DataFrame:
    frame = pl.read_ipc(io.BytesIO(item.body))
    if frame.columns != list(event_log.BATCH_SCHEMA):
        raise ValueError(f"its columns are not a batch's: {frame.columns}")
    return frame


def land_once(data_dir: Path, target: LandingTarget, index: LandedIndex, *, now: dt.datetime,
              max_events: int = MAX_EVENTS_PER_ROUND, hold_open_hour: bool = True,
              on_stage: Callable[[str, int, int], None] | None = None,
              carried: Sequence[Carried] = ()) -> Round:
    """One landing round (module docstring). `index` must have been loaded from `data_dir`.
    `hold_open_hour=False` lands the running hour's events too (`lander --once --include-open-hour`).
    `carried`: batches the broker delivered (module docstring); those the round consumed are in
    `Round.carried`, to be acknowledged by the caller; the others (past `max_events`) wait for the
    next round."""
    started = time.perf_counter()
    data_dir = Path(data_dir)
    open_from = floor_hour(now) if hold_open_hour else None
    with target.lock():
        swept = target.sweep()
        if swept.removed:
            index.load()  # an index file of an unpublished generation may have just been removed
        found = event_log.batches(data_dir)
        ready = event_log.held(data_dir, before=open_from)  # held events whose hour has ended
        done = [batch.name for batch in found if batch.name in index.batches]
        done_held = [item.name for item in ready if item.name in index.batches]
        done_carried = [item for item in carried if item.name in index.batches]
        event_log.remove(data_dir, done)
        event_log.remove_held(data_dir, done_held)
        todo: list[event_log.Batch | Carried] = []
        todo_held: list[event_log.Held] = []
        consumed: list[Carried] = list(done_carried)
        total = 0
        items: list[event_log.Batch | Carried | event_log.Held] = [*found, *carried, *ready]
        for item in items:
            if item.name in index.batches:
                continue
            if (todo or todo_held) and total + item.events > max_events:
                break
            if isinstance(item, event_log.Held):
                todo_held.append(item)
            else:
                todo.append(item)
            total += item.events
        skipped = len(done) + len(done_held) + len(done_carried)
        if not todo and not todo_held:
            return Round(batches=skipped, already_landed=skipped, seconds=time.perf_counter() - started,
                         carried=tuple(consumed))
        parts, held_now = [], 0
        for batch in list(todo):
            try:
                frame = (event_log.read(data_dir, batch) if isinstance(batch, event_log.Batch)
                         else _carried_frame(batch))
            except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
                # Written whole and fsynced before its 202 (or confirmed by the broker), a batch is
                # unreadable only when the disk failed it: set it aside for the operator rather than
                # stop every later landing.
                todo.remove(batch)
                if isinstance(batch, event_log.Batch):
                    aside = event_log.set_aside(data_dir, batch)
                else:
                    aside = event_log.set_aside_bytes(data_dir, batch.name, batch.body)
                    consumed.append(batch)
                log.error("batch %s of the log cannot be read (%s); moved to %s, the other batches land",
                          batch.name, exc, aside)
                continue
            if open_from is not None:
                running = frame.get_column("ts") >= open_from
                if running.any():
                    later = frame.filter(running)
                    for (hour,), rows in later.group_by(pl.col("ts").dt.truncate("1h"), maintain_order=True):
                        event_log.hold(data_dir, cast(dt.datetime, hour),
                                       batch if isinstance(batch, event_log.Batch) else batch.batch, rows)
                    held_now += later.height
                    frame = frame.filter(running.not_())
            parts.append(frame)
        for item in todo_held:
            parts.append(event_log.read_held(data_dir, item))
        if not todo and not todo_held:
            return Round(batches=skipped, already_landed=skipped, seconds=time.perf_counter() - started,
                         carried=tuple(consumed))
        frame = pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame(schema=event_log.BATCH_SCHEMA)
        fresh = frame.filter(index.known(frame.get_column("event_id")).not_()
                             ).unique(subset="event_id", keep="first", maintain_order=True)
        duplicates = frame.height - fresh.height
        frames = {table: fresh.filter(pl.col("type") == table).select(
                      [pl.col(name).cast(dtype) for name, dtype in schema.SCHEMAS[table].items()])
                  for table in schema.TABLES}
        ids = fresh.select("event_id", "ts")
        segment = new_segment_path(data_dir)
        names = [batch.name for batch in todo]
        files = [batch.name for batch in todo if isinstance(batch, event_log.Batch)]
        consumed += [batch for batch in todo if isinstance(batch, Carried)]
        held_names = [item.name for item in todo_held]
        token = hashlib.sha256("\n".join([*names, *held_names]).encode()).hexdigest()[:32]
        written = target.write_tables({t: f for t, f in frames.items() if f.height}, now=now, on_stage=on_stage,
                                      other_files={segment: segment_bytes(ids, [*names, *held_names])},
                                      dedup_token=token)
        index.add(segment, ids, [*names, *held_names])
    event_log.remove(data_dir, files)
    event_log.remove_held(data_dir, held_names)
    newest = cast(dt.datetime | None, fresh.get_column("ts").max()) if fresh.height else None  # a timestamp column
    return Round(batches=len(todo) + len(todo_held) + skipped, landed=fresh.height, duplicates=duplicates,
                 generation=written.generation, seconds=time.perf_counter() - started, newest=newest,
                 already_landed=skipped, held=held_now, more=total >= max_events, carried=tuple(consumed))
