"""Writing a snapshot's files (the layout: snapshot.py): segments as uncompressed Arrow IPC with one
record batch, dimension columns as dictionary arrays whose indices are the Enum's codes; the cost
index's spans; `snapshot.json`. Every file is fsynced."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.ipc

from service.store import schema
from service.store.encoding import enum_categories
from service.store.snapshot import META_FILE, segment_name


def _arrow_table(frame: pl.DataFrame, table: str) -> pa.Table:
    """One chunk per column; dimension columns as dictionary arrays (indices: the Enum's codes)."""
    frame = frame.rechunk()
    dimensions = schema.DIMENSIONS[table]
    arrays, fields = [], []
    for column in frame.columns:
        series = frame.get_column(column)
        if column in dimensions:
            indices = series.to_physical().to_arrow()
            dictionary = enum_categories(frame, column).to_arrow().cast(pa.large_string())
            array: pa.Array = pa.DictionaryArray.from_arrays(indices, dictionary)
        else:
            array = series.to_arrow()
        arrays.append(array)
        fields.append(pa.field(column, array.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _write_ipc(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as ipc:
        ipc.write_table(table, max_chunksize=max(table.num_rows, 1))
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def write_segment(path: Path, frame: pl.DataFrame, table: str) -> None:
    """One segment file (an encoded frame, sorted by ts), fsynced."""
    _write_ipc(_arrow_table(frame, table), path)


def write_spans(directory: Path, spans: Mapping[str, pl.DataFrame],
                before_file: Callable[[int], None] | None = None) -> None:
    for index, (name, frame) in enumerate(spans.items()):
        if before_file is not None:
            before_file(index)
        _write_ipc(frame.to_arrow(), directory / f"spans-{name}.arrow")


def write_meta(directory: Path, meta: Mapping[str, Any]) -> None:
    with open(directory / META_FILE, "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())


def write(directory: Path, tables: Mapping[str, pl.DataFrame], spans: Mapping[str, pl.DataFrame],
          meta: Mapping[str, Any], before_file: Callable[[int, int], None] | None = None) -> None:
    """Write a whole snapshot into `directory` (which must not exist yet): one segment per table
    (named for `meta`'s generation), each file fsynced. `before_file(done, total)` is called
    before each file."""
    directory.mkdir(parents=True)
    total = len(tables) + len(spans) + 1
    step = before_file or (lambda _done, _total: None)
    segments = {}
    for done, (table, frame) in enumerate(tables.items()):
        step(done, total)
        segments[table] = [segment_name(table, meta["generation"])]
        write_segment(directory / segments[table][0], frame, table)
    write_spans(directory, spans, lambda index: step(len(tables) + index, total))
    step(total - 1, total)
    write_meta(directory, {**meta, "segments": segments})


def meta_record(generation: int, partitions: list[str], versions: Mapping[str, Mapping[date, int]]) -> dict[str, Any]:
    return {
        "generation": generation,
        "partitions": sorted(partitions),
        "versions": {table: {day.isoformat(): g for day, g in sorted(days.items())} for table, days in versions.items()},
    }
