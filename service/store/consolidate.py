"""Writing a generation's snapshot at landing time (the format is `snapshot`'s).

The landing writer calls `stage` once the generation's partition files are in place and before it
publishes GENERATION. The new snapshot builds on the previous generation's snapshot when that one
holds exactly the partition files that were there before this landing; otherwise (no previous
snapshot, `data demo --replace` moved the old tables away, a file placed by hand) it is read again
from every partition file of the generation. Either way it holds exactly what
`reader.read_partitions` would read for the generation.

Building on the previous snapshot, per table:

- the landing adds no rows to it: its segment files are hard-linked (same bytes, no copy);
- **append**: the rows all come at or after the table's last event, every dimension's appended
  dictionary keeps its code width, and the table has fewer than `snapshot.MAX_SEGMENTS` segments:
  the new rows are written as one new segment (dictionaries = the previous segment's plus the new
  values) and the previous segment files are hard-linked. The cost is the landing's rows, not the
  store's;
- **tail merge**: some rows come before the last event (late events, a backfill of the last
  days), but none before the end of the first segment: the segments those rows reach (the tail:
  from the first whose last event comes after the earliest new row) and the new rows are merged
  into one new segment (the previous dictionaries with the new values appended, as an append
  does), and the earlier segments are hard-linked. The cost is the tail's rows, not the store's;
  it adds no segment, so the segment bound does not apply;
- otherwise **compaction**: the previous segments (mapped) and the new rows are merged into one
  segment with sorted dictionaries (appended when they come after, else one linear merge of the
  two sorted runs).

The cost index's day spans are small and rewritten each generation (merged by min and max, so a
landing computes only the new rows' spans).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from service.store import day_spans, encoding, reader, schema, snapshot, snapshot_reading, snapshot_writing

log = logging.getLogger(__name__)

APPEND, TAIL, COMPACT, LINK, FRESH = "append", "tail", "compact", "link", "fresh"


@dataclasses.dataclass(frozen=True)
class TablePlan:
    """What a landing does to one table's segments."""

    action: str  # APPEND, TAIL, COMPACT, LINK (nothing new), FRESH (no previous rows: one new segment)
    linked: tuple[str, ...] = ()  # previous segment files kept (hard-linked)
    reason: str = ""  # why a table is compacted or its tail merged
    frame: pl.DataFrame | None = None  # the encoded rows to write (APPEND, TAIL: the new rows only)
    merged: tuple[str, ...] = ()  # TAIL: the previous segment files merged with the new rows


def _partitions(data_dir: Path, generation: int) -> list[str]:
    return [
        path.relative_to(data_dir).as_posix()
        for table in schema.TABLES
        for path in reader.partition_files(data_dir, table, generation)
    ]


def _merged(old: pl.DataFrame, new: pl.DataFrame, table: str) -> pl.DataFrame:
    """The rows of two encoded tables as one, with sorted dictionaries."""
    old, new = encoding.recode(old, new, table)
    if not old.height or not new.height or new.get_column("ts")[0] >= old.get_column("ts")[-1]:
        return pl.concat([old, new], rechunk=True)
    return old.merge_sorted(new, key="ts").rechunk()  # one linear pass: both are sorted by ts


def plan_table(previous: Path, names: list[str], new: pl.DataFrame | None, table: str) -> TablePlan:
    """Append, tail merge or compact (module docstring); `new` in the stored schema (not encoded)."""
    if new is None or not new.height:
        return TablePlan(LINK, tuple(names))
    mapped = [snapshot_reading.map_segment(previous / name) for name in names]
    ends = [snapshot_reading.last_ts(segment) for segment in mapped]  # None: a segment without rows
    if all(end is None for end in ends):
        return TablePlan(FRESH)
    newest = mapped[-1]
    first = new.get_column("ts").min()
    # The first segment the new rows reach: one whose last event comes after their first
    # (len(names): none, an append). Every segment before it ends at or before that row.
    tail = next((index for index, end in enumerate(ends) if end is not None and end > first), len(names))
    if tail == 0:
        return TablePlan(COMPACT, reason="rows before the end of the first segment (a backfill)")
    if tail == len(names) and len(names) >= snapshot.MAX_SEGMENTS:  # a tail merge adds no segment
        return TablePlan(COMPACT, reason=f"{len(names)} segments, the most a table keeps")
    dictionaries = {}
    for d in schema.DIMENSIONS[table]:
        old = snapshot_reading.dictionary(newest, d)
        grown = encoding.appended_dictionary(old, new.get_column(d))
        if encoding.code_width(grown.len()) != encoding.code_width(old.len()):
            return TablePlan(COMPACT, reason=f"{d} grows to {grown.len():,} values (wider codes)")
        dictionaries[d] = grown
    encoded = encoding.encode_with(new, table, dictionaries)
    if tail < len(names):
        merged = tuple(names[tail:])
        return TablePlan(TAIL, tuple(names[:tail]), frame=encoded, merged=merged,
                         reason=f"rows before the last event: {len(merged)} of {len(names)} segments merged with them")
    return TablePlan(APPEND, tuple(names), frame=encoded)


def stage(data_dir: Path, generation: int, landed: Mapping[str, pl.DataFrame], landed_files: list[str], *,
          on_stage: Callable[[str, int, int], None] | None = None) -> Path:
    """Write generation `generation`'s snapshot into the staging directory (the caller renames it
    into place with `snapshot.place`). `landed` are the rows this landing adds (stored schema),
    `landed_files` its partition files (relative to the data directory).

    `on_stage(stage, done, total)` is called on the way (progress, tests): "compacting" before the
    previous rows of a compacted table are read and merged, "snapshot" before each file written
    (segments, then spans, then snapshot.json), "linking" before each previous segment file is
    hard-linked into the new directory (after every file is written)."""
    data_dir = Path(data_dir)
    step = on_stage or (lambda _stage, _done, _total: None)
    partitions = _partitions(data_dir, generation)
    staged = snapshot.staged_snapshot_dir(data_dir, generation)
    snapshot.remove(staged)
    versions = {table: reader.date_versions(data_dir, table, generation) for table in schema.TABLES}
    meta = snapshot_writing.meta_record(generation, partitions, versions)
    previous = snapshot.snapshot_dir(data_dir, generation - 1)
    held_meta: dict[str, Any] | None = None
    fresh = set(partitions) == set(landed_files)  # nothing before this landing: build on empty tables
    if not fresh:
        with contextlib.suppress(FileNotFoundError, ValueError):
            candidate = snapshot_reading.read_meta(previous)
            held = set(candidate.get("partitions", []))
            if held | set(landed_files) == set(partitions) and not held & set(landed_files):
                held_meta = candidate
    if not fresh and held_meta is None:
        log.info("snapshot of generation %d: reading %d partition files", generation, len(partitions))
        tables = {table: reader.read_table(data_dir, table, generation) for table in schema.TABLES}
        snapshot_writing.write(staged, tables, day_spans.day_spans(tables[schema.SUPPRESSIONS]), meta,
                       lambda done, total: step("snapshot", done, total))
        return staged

    if fresh:
        plans = {table: TablePlan(FRESH) for table in schema.TABLES}
    else:
        assert held_meta is not None
        plans = {table: plan_table(previous, snapshot_reading.segment_names(held_meta, table), landed.get(table), table)
                 for table in schema.TABLES}
    compacted = [table for table, plan in plans.items() if plan.action in (COMPACT, TAIL)]
    spans_changed = landed.get(schema.SUPPRESSIONS) is not None and landed[schema.SUPPRESSIONS].height > 0
    written = [table for table, plan in plans.items() if plan.action != LINK]
    total = len(written) + len(day_spans.NAMES) + 1
    staged.mkdir(parents=True)
    segments: dict[str, list[str]] = {}
    new_suppressions: pl.DataFrame | None = None
    for done, table in enumerate(written):
        plan = plans[table]
        name = snapshot.segment_name(table, generation)
        rows = landed.get(table)
        if plan.action == APPEND:
            assert plan.frame is not None
            frame = encoded = plan.frame
            segments[table] = [*plan.linked, name]
        elif plan.action == TAIL:
            assert plan.frame is not None
            encoded = plan.frame
            step("compacting", compacted.index(table), len(compacted))
            labels = {d: encoding.enum_categories(encoded, d) for d in schema.DIMENSIONS[table]}
            tail = snapshot_reading.read_segments([previous / n for n in plan.merged], table, labels=labels)
            frame = tail.merge_sorted(encoded, key="ts").rechunk()  # one linear pass: both are sorted by ts
            del tail
            segments[table] = [*plan.linked, name]
        else:
            encoded = encoding.encode(rows if rows is not None else pl.DataFrame(schema=schema.SCHEMAS[table]), table)
            frame = encoded
            if plan.action == COMPACT:
                step("compacting", compacted.index(table), len(compacted))
                assert held_meta is not None
                names = snapshot_reading.segment_names(held_meta, table)
                old = snapshot_reading.read_segments([previous / n for n in names], table)
                frame = _merged(old, encoded, table)
                del old
            segments[table] = [name]
        if table == schema.SUPPRESSIONS:
            new_suppressions = encoded
        step("snapshot", done, total)
        snapshot_writing.write_segment(staged / name, frame, table)
        log.info("snapshot of generation %d: %s: %s, %d rows written%s", generation, table, plan.action,
                 frame.height, f" ({plan.reason})" if plan.reason else "")
        del frame
    for table, plan in plans.items():
        if plan.action == LINK:
            segments[table] = list(plan.linked)
    if fresh:
        assert new_suppressions is not None
        spans = day_spans.day_spans(new_suppressions)
    else:
        spans = snapshot_reading.read_spans(previous)
        if spans_changed and new_suppressions is not None:
            spans = day_spans.merge(spans, day_spans.day_spans(new_suppressions))
    snapshot_writing.write_spans(staged, spans, lambda index: step("snapshot", len(written) + index, total))
    step("snapshot", total - 1, total)
    snapshot_writing.write_meta(staged, {**meta, "segments": segments})
    links = [name for table in schema.TABLES for name in segments[table] if not (staged / name).exists()]
    for index, name in enumerate(links):
        step("linking", index, len(links))
        os.link(previous / name, staged / name)
    return staged
