"""Writing a generation's snapshot at landing time (the format is `snapshot`'s).

The landing writer calls `stage` once the generation's partition files are in place and before it
publishes GENERATION. The new snapshot is the previous generation's snapshot (mapped) plus the rows
being landed, when the previous snapshot holds exactly the partition files that were there before
this landing; otherwise (no previous snapshot, `data demo --replace` moved the old tables away, a
file placed by hand) it is read again from every partition file of the generation. Either way it
holds exactly what `reader.read_partitions` would read for the generation.

Merging keeps what is already sorted: rows that all come after the previous snapshot's last event
(the usual case: new hours) are appended; otherwise the two, each sorted by ts, are merged in one
pass. A table the landing does not touch is hard-linked from the previous
snapshot (same bytes, no copy). The cost index's day spans merge the same way (min and max).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import polars as pl

from service.store import day_spans, reader, schema, snapshot

log = logging.getLogger(__name__)


def _partitions(data_dir: Path, generation: int) -> list[str]:
    return [
        path.relative_to(data_dir).as_posix()
        for table in schema.TABLES
        for path in reader.partition_files(data_dir, table, generation)
    ]


def _merged(old: pl.DataFrame, new: pl.DataFrame, table: str) -> pl.DataFrame:
    """The rows of two encoded tables as one (see the module's docstring)."""
    old, new = snapshot.recode(old, new, table)
    if not old.height or not new.height or new.get_column("ts")[0] >= old.get_column("ts")[-1]:
        return pl.concat([old, new], rechunk=True)
    return old.merge_sorted(new, key="ts").rechunk()  # one linear pass: both are sorted by ts


def stage(data_dir: Path, generation: int, landed: Mapping[str, pl.DataFrame], landed_files: list[str], *,
          before_file: Callable[[int, int], None] | None = None) -> Path:
    """Write generation `generation`'s snapshot into the staging directory (the caller renames it
    into place with `snapshot.place`). `landed` are the rows this landing adds (stored schema),
    `landed_files` its partition files (relative to the data directory); `before_file(done, total)`
    is called before each file of the snapshot is written (progress, tests)."""
    data_dir = Path(data_dir)
    partitions = _partitions(data_dir, generation)
    staged = snapshot.staged_snapshot_dir(data_dir, generation)
    snapshot.remove(staged)
    versions = {table: reader.date_versions(data_dir, table, generation) for table in schema.TABLES}
    meta = snapshot.meta_record(generation, partitions, versions)
    previous = snapshot.snapshot_dir(data_dir, generation - 1)
    base = None
    linked = True  # tables the landing does not touch can be linked from `previous`
    if set(partitions) == set(landed_files):  # nothing before this landing: build on empty tables
        empty = {table: snapshot.encode(pl.DataFrame(schema=schema.SCHEMAS[table]), table) for table in schema.TABLES}
        base, linked = (empty, day_spans.day_spans(empty[schema.SUPPRESSIONS]), {}), False
    else:
        with contextlib.suppress(FileNotFoundError, ValueError):
            held = set(snapshot.read_meta(previous).get("partitions", []))
            if held | set(landed_files) == set(partitions) and not held & set(landed_files):
                base = snapshot.read(previous)
    if base is None:
        log.info("snapshot of generation %d: reading %d partition files", generation, len(partitions))
        tables = {table: reader.read_table(data_dir, table, generation) for table in schema.TABLES}
        snapshot.write(staged, tables, day_spans.day_spans(tables[schema.SUPPRESSIONS]), meta, before_file)
        return staged
    old_tables, old_spans, _meta = base
    added = {table: landed.get(table) for table in schema.TABLES}
    changed = {table: snapshot.encode(frame, table) for table, frame in added.items() if frame is not None and frame.height}
    tables = {table: _merged(old_tables[table], frame, table) for table, frame in changed.items()}
    if not linked:
        tables = {table: tables.get(table, old_tables[table]) for table in schema.TABLES}
    new_rows = changed.get(schema.SUPPRESSIONS)
    spans = old_spans
    if new_rows is not None:
        spans = day_spans.merge(old_spans, day_spans.day_spans(new_rows))
    snapshot.write(staged, tables, spans, meta, before_file)
    for table in schema.TABLES:
        if table not in tables:
            os.link(previous / f"{table}.arrow", staged / f"{table}.arrow")
    return staged
