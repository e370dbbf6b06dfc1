"""A generation's snapshot: every event table as a list of segments that every process maps.

    <data>/snapshots/g<generation>/<table>-g<G>.arrow      a segment of the table, written by generation G
    <data>/snapshots/g<generation>/spans-<name>.arrow      day_spans of the suppressions (cost index)
    <data>/snapshots/g<generation>/snapshot.json           its segments per table, partition files, date versions

Each segment is uncompressed Arrow IPC with one record batch, sorted by ts, so a column is one
contiguous buffer in the file, at an aligned offset. A process opens it with `pyarrow.memory_map`
and hands the buffers to polars without copying: the pages live once in the OS page cache, however
many workers read them (docs/architecture.md, "One copy of the events per machine"). A table is
its segments in order, each starting at or after the previous one's last event; the reader
concatenates them without copying (`pl.concat(..., rechunk=False)`: one chunk per segment) and
the ts column stays marked sorted.

Segments let a landing cost what it lands, not what the store holds: a landing whose rows all
come at or after the previous snapshot's last event writes one new segment and hard-links the
previous generation's segment files into the new generation's directory (same inode, no copy).
Rows that come earlier merge only the segments they reach (a tail merge), unless they reach the
first: then, as when a code widens or the segment bound is reached, the table is compacted,
rewritten whole into one segment (`consolidate`).

Dimension columns are Arrow dictionary columns: the file holds, per column, the distinct values
once (the dictionary) and a code per row (the indices) in the integer width polars gives an `Enum`
of that many values (UInt8 below 256 values, UInt16 below 65,536, else UInt32). A reader maps the
indices and declares them `Enum(dictionary)`, which is a re-labelling of the same buffer, not a
conversion. A `Categorical` would not do: its codes belong to a process-wide string cache, so every
process would rewrite every code into a private copy.

The Enum of a column must be one dtype over all segments, so a table's dictionaries are append-only
from one segment to the next: a new segment's dictionary is the previous one's followed by the new
values (sorted among themselves), and codes of older segments stay valid. The reader labels every
segment with the newest segment's dictionary. So the dictionary, hence the Enum, is not in string
order once a segment appended values: nothing may order or compare dimension values by their codes
(the engine turns them into strings before it orders anything). A compaction writes sorted
dictionaries again. When an appended value would change the codes' width, the landing compacts
(older segments' codes would no longer fit the Enum's physical type).

Written by the landing writer (`writer.write_tables`, through `consolidate.stage`) in the staging
directory, then renamed into place before GENERATION is published; a reader opens only the snapshot
of the GENERATION it read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any, cast

import polars as pl
import pyarrow as pa
import pyarrow.ipc

from service.store import day_spans, layout, schema

META_FILE = "snapshot.json"
_SNAPSHOT_NAME = re.compile(r"^g(\d+)$")

# At most this many segments per table; a landing that would add one more compacts the table
# instead. Each segment is a chunk of every column of the served frame: polars runs its kernels
# chunk by chunk and a group-by combines per-chunk partial states, so many small chunks slow every
# query a little, and a reader maps and labels each file. 16 keeps that overhead small (measured in
# docs/benchmarks.md section 18) while a compaction, which rewrites the whole table, comes at most
# once in 16 landings that append.
MAX_SEGMENTS = 16

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Where snapshots live


def snapshots_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "snapshots"


def snapshot_dir(data_dir: Path, generation: int) -> Path:
    return snapshots_dir(data_dir) / f"g{generation:08d}"


def snapshot_generation(path: Path) -> int | None:
    match = _SNAPSHOT_NAME.match(Path(path).name)
    return int(match.group(1)) if match else None


def existing(data_dir: Path) -> dict[int, Path]:
    """generation -> snapshot directory, for every snapshot in the store."""
    root = snapshots_dir(data_dir)
    if not root.is_dir():
        return {}
    return {
        generation: path
        for path in root.iterdir()
        if (generation := snapshot_generation(path)) is not None and path.is_dir()
    }


def remove(path: Path) -> None:
    """Delete a snapshot directory. Processes that still map its files keep reading them: the
    kernel frees the pages when the last mapping goes."""
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The in-memory form


def encode(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """A table in the stored schema (or castable to it) in the form the engine reads: exactly the
    table's columns, dimension columns as Enum over their sorted distinct values, sorted by ts."""
    stored = frame.lazy().select(pl.col(column).cast(dtype) for column, dtype in schema.SCHEMAS[table].items())
    dimensions = schema.DIMENSIONS[table]
    values = stored.select(pl.col(d).drop_nulls().unique().sort().implode() for d in dimensions).collect()
    enums = {d: pl.Enum(values.get_column(d)[0]) for d in dimensions}
    encoded = stored.with_columns(pl.col(d).cast(enums[d]) for d in dimensions).collect()
    if encoded.get_column("ts").is_sorted():  # landings usually come in time order: no sort needed
        return encoded.with_columns(pl.col("ts").set_sorted())
    return encoded.sort("ts")


def enum_categories(frame: pl.DataFrame, column: str) -> pl.Series:
    dtype = frame.schema[column]
    assert isinstance(dtype, pl.Enum), f"{column} is {dtype}, not an Enum"
    return dtype.categories


def recode(frame: pl.DataFrame, more: pl.DataFrame, table: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both frames (encoded) with the same Enum per dimension: the union of their values, sorted.
    Codes of values after which a new value sorts shift; the strings stay. A column whose values
    are already the union's is left as it is (no pass over its rows)."""
    targets = {}
    for d in schema.DIMENSIONS[table]:
        union = pl.concat([enum_categories(frame, d), enum_categories(more, d)]).unique().sort()
        targets[d] = pl.Enum(union)

    def cast(side: pl.DataFrame) -> pl.DataFrame:
        changed = [pl.col(d).cast(dtype) for d, dtype in targets.items() if side.schema[d] != dtype]
        return side.with_columns(changed) if changed else side

    return cast(frame), cast(more)


def code_width(values: int) -> pl.DataType:
    """The integer type polars gives the codes of an Enum of `values` categories (tests check it
    against polars)."""
    return pl.UInt8() if values < 2**8 else pl.UInt16() if values < 2**16 else pl.UInt32()


def appended_dictionary(old: pl.Series, values: pl.Series) -> pl.Series:
    """`old` followed by the values of `values` it lacks, sorted among themselves (append-only)."""
    fresh = values.drop_nulls().unique()
    fresh = fresh.filter(fresh.is_in(old.cast(pl.String).implode()).not_()).sort()
    return pl.concat([old.cast(pl.String), fresh.cast(pl.String)]) if fresh.len() else old.cast(pl.String)


def encode_with(frame: pl.DataFrame, table: str, dictionaries: Mapping[str, pl.Series]) -> pl.DataFrame:
    """Like `encode`, but each dimension an Enum over the given dictionary (which holds every value
    of the column), in its order."""
    stored = frame.lazy().select(pl.col(column).cast(dtype) for column, dtype in schema.SCHEMAS[table].items())
    encoded = stored.with_columns(pl.col(d).cast(pl.Enum(dictionaries[d])) for d in schema.DIMENSIONS[table]).collect()
    if encoded.get_column("ts").is_sorted():
        return encoded.with_columns(pl.col("ts").set_sorted())
    return encoded.sort("ts")


# ---------------------------------------------------------------------------------------------
# Writing


def segment_name(table: str, generation: int) -> str:
    """The file name of the segment of `table` that generation `generation` wrote."""
    return f"{table}-g{generation:08d}.arrow"


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


# ---------------------------------------------------------------------------------------------
# Reading (mapping)


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
    """A table from its segment files, mapped (module docstring): each segment's dimension codes
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


def unlink_stale(data_dir: Path, keep: int) -> int:
    """Remove every snapshot but generation `keep`'s (older ones nobody will open again, newer ones
    a killed landing left); the number removed."""
    removed = 0
    for generation, path in existing(data_dir).items():
        if generation != keep:
            remove(path)
            removed += 1
    return removed


def staged_snapshot_dir(data_dir: Path, generation: int) -> Path:
    return layout.staging_dir(data_dir) / f"snapshot-g{generation:08d}"


def place(staged: Path, data_dir: Path, generation: int) -> Path:
    """Rename a staged snapshot into place (atomic: a reader sees all of it or none)."""
    final = snapshot_dir(data_dir, generation)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():  # left by a landing of this generation that was killed before publishing
        remove(final)
    os.replace(staged, final)
    with contextlib.suppress(OSError):
        fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return final
