"""Reading a snapshot (the layout: snapshot.py): its segments memory-mapped and handed to polars
without copying, each dimension's codes labelled with the newest segment's dictionary
(`read_segments`), kept from one load to the next (`SegmentCache`); its spans and `snapshot.json`."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, cast

import polars as pl
import pyarrow as pa
import pyarrow.ipc

from service.store import day_spans, schema
from service.store.encoding import code_width, encode
from service.store.snapshot import META_FILE

# The snapshot's logger, whose name its lines carry, as before snapshot.py was split.
log = logging.getLogger("service.store.snapshot")


def segment_names(meta: Mapping[str, Any], table: str) -> list[str]:
    """The segment files of `table`, oldest first."""
    return list(meta["segments"][table])


def map_segment(path: Path) -> pa.Table:
    """A segment file, memory-mapped (its buffers are the file's pages, not a copy)."""
    source = pa.memory_map(str(path), "r")
    return pa.ipc.open_file(source).read_all()


def _single(chunked: pa.ChunkedArray) -> pa.Array:
    if chunked.num_chunks == 1:
        return chunked.chunk(0)  # type: ignore[return-value]  # pyarrow-stubs: chunk() gives an Array
    if chunked.num_chunks == 0:
        return pa.array([], type=chunked.type)
    return chunked.combine_chunks()  # not written by this module (one record batch per file)


def dictionary(mapped: pa.Table, column: str) -> pl.Series:
    """A mapped segment's dictionary of `column`, as strings."""
    array = _single(mapped.column(column))
    values = array.dictionary if isinstance(array, pa.DictionaryArray) else pa.array([], type=pa.large_string())
    return pl.Series(column, values.cast(pa.large_string()), dtype=pl.String)


def last_ts(mapped: pa.Table) -> Any:
    """The last event of a mapped segment (its rows are sorted by ts); None when it is empty."""
    return pl.Series(_single(mapped.column("ts")))[-1] if mapped.num_rows else None


def _labelled(array: pa.Array, enum: pl.Enum, column: str) -> pl.Series:
    """A mapped dictionary column's indices declared `enum` (the same buffer, relabelled)."""
    indices = pl.Series(column, cast(pa.DictionaryArray, array).indices)  # an Enum column: dictionary-encoded
    width = code_width(enum.categories.len())
    if indices.dtype != width:  # not written by this module: a copy, but still correct
        log.warning("snapshot column %s holds %s codes for %d values; converting", column, indices.dtype,
                    enum.categories.len())
        indices = indices.cast(width)
    return indices.cat.to(enum)


class SegmentCache:
    """Mapped segments and their labelled dimension columns, kept from one load to the next.

    A worker that follows a new generation maps only the segments it did not hold: a file of the
    new snapshot that is the same file (device and inode: hard-linked) as one already mapped is
    reused, and so are its dimension columns when their dictionary did not change. While an entry
    is held its file stays allocated, so its inode cannot be reused by another file."""

    def __init__(self) -> None:
        self._tables: dict[tuple[int, int], pa.Table] = {}
        self._columns: dict[tuple[int, int, str], tuple[pl.Series, pl.Series]] = {}  # -> (categories, column)
        self._used: set[tuple[int, int]] = set()

    def open(self, path: Path) -> tuple[tuple[int, int], pa.Table]:
        info = os.stat(path)
        key = (info.st_dev, info.st_ino)
        mapped = self._tables.get(key)
        if mapped is None:
            mapped = self._tables[key] = map_segment(path)
        self._used.add(key)
        return key, mapped

    def column(self, key: tuple[int, int], column: str, array: pa.Array, enum: pl.Enum) -> pl.Series:
        held = self._columns.get((*key, column))
        if held is not None and held[0].equals(enum.categories):
            return held[1]
        series = _labelled(array, enum, column)
        self._columns[(*key, column)] = (enum.categories, series)
        return series

    def begin(self) -> None:
        self._used = set()

    def keep_used(self) -> None:
        """Forget what the last load did not use (the files of replaced snapshots)."""
        self._tables = {key: table for key, table in self._tables.items() if key in self._used}
        self._columns = {key: value for key, value in self._columns.items() if key[:2] in self._used}

    @property
    def held(self) -> int:
        return len(self._tables)


def read_segments(paths: list[Path], table: str, cache: SegmentCache | None = None,
                  labels: Mapping[str, pl.Series] | None = None) -> pl.DataFrame:
    """A table from its segment files, mapped (snapshot.py's docstring): each segment's dimension codes
    labelled with the newest segment's dictionary, or with `labels` (per dimension, a dictionary
    that extends the newest one: a tail merge's appended values), the segments concatenated
    without copying."""
    opened = [cache.open(path) if cache is not None else ((0, index), map_segment(path)) for index, path in enumerate(paths)]
    dimensions = [d for d in schema.DIMENSIONS[table] if d in opened[-1][1].column_names]
    enums = {d: pl.Enum(labels[d] if labels is not None else dictionary(opened[-1][1], d)) for d in dimensions}
    parts = []
    for index, (key, mapped) in enumerate(opened):
        columns = []
        for name in mapped.column_names:
            array = _single(mapped.column(name))
            if name in enums:
                # A segment's dictionary must be a prefix of the one its codes are read with.
                if labels is not None or index < len(opened) - 1:
                    own = dictionary(mapped, name)
                    if not own.equals(enums[name].categories.head(own.len())):
                        raise ValueError(f"{paths[index]}: the dictionary of {name} is not a prefix of the newest one")
                if cache is not None:
                    columns.append(cache.column(key, name, array, enums[name]).alias(name))
                else:
                    columns.append(_labelled(array, enums[name], name))
            else:
                columns.append(pl.Series(name, array))
        parts.append(pl.DataFrame(columns))
    nonempty = [part for part in parts if part.height]
    if not nonempty:  # polars gives an empty dictionary column its own type; the schema is the table's
        return encode(pl.DataFrame(schema=schema.SCHEMAS[table]), table)
    for before, after in zip(nonempty, nonempty[1:], strict=False):
        if after.get_column("ts")[0] < before.get_column("ts")[-1]:
            raise ValueError(f"segments of {table} out of order: {', '.join(p.name for p in paths)}")
    frame = nonempty[0] if len(nonempty) == 1 else pl.concat(nonempty, rechunk=False)
    return frame.with_columns(pl.col("ts").set_sorted())


def read_table(path: Path, table: str) -> pl.DataFrame:
    """One table file (a segment) of a snapshot, mapped."""
    return read_segments([path], table)


def read_meta(directory: Path) -> dict[str, Any]:
    return json.loads((directory / META_FILE).read_text(encoding="utf-8"))


def read_versions(meta: Mapping[str, Any]) -> dict[str, dict[date, int]]:
    return {
        table: {date.fromisoformat(day): int(g) for day, g in days.items()}
        for table, days in meta.get("versions", {}).items()
    }


def read_spans(directory: Path) -> dict[str, pl.DataFrame]:
    """The cost index's spans (small: read into memory)."""
    return {name: pl.read_ipc(directory / f"spans-{name}.arrow") for name in day_spans.NAMES}


def read(directory: Path, cache: SegmentCache | None = None
         ) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame], dict[str, Any]]:
    """(tables, spans, meta) of the snapshot in `directory`; FileNotFoundError when it is gone."""
    meta = read_meta(directory)
    tables = {
        table: read_segments([directory / name for name in segment_names(meta, table)], table, cache)
        for table in schema.TABLES
    }
    return tables, read_spans(directory), meta
