"""A generation's snapshot: the whole of each event table in one file that every process maps.

    <data>/snapshots/g<generation>/suppressions.arrow       every row of the generation, sorted by ts
    <data>/snapshots/g<generation>/keyword_changes.arrow
    <data>/snapshots/g<generation>/spans-<name>.arrow       day_spans of the suppressions (cost index)
    <data>/snapshots/g<generation>/snapshot.json            the partition files it holds, date versions

Each table file is uncompressed Arrow IPC with one record batch, so a column is one contiguous
buffer in the file, at an aligned offset. A process opens it with `pyarrow.memory_map` and hands
the buffers to polars without copying: the pages live once in the OS page cache, however many
workers read them (docs/architecture.md, "One copy of the events per machine").

Dimension columns are Arrow dictionary columns: the file holds, per column, the sorted distinct
values once (the dictionary) and a code per row (the indices) in the integer width polars gives
an `Enum` of that many values. A reader maps the indices and declares them `Enum(dictionary)`,
which is a re-labelling of the same buffer, not a conversion. A `Categorical` would not do: its
codes belong to a process-wide string cache, so every process would rewrite every code into a
private copy. With the dictionary sorted, an Enum orders like its strings.

Written by the landing writer (`writer.write_tables`) in the staging directory, then renamed into
place before GENERATION is published; a reader opens only the snapshot of the GENERATION it read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.ipc

from service.store import day_spans, layout, schema

META_FILE = "snapshot.json"
_SNAPSHOT_NAME = re.compile(r"^g(\d+)$")


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


# ---------------------------------------------------------------------------------------------
# Writing


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


def write(directory: Path, tables: Mapping[str, pl.DataFrame], spans: Mapping[str, pl.DataFrame],
          meta: Mapping[str, Any], before_file: Callable[[int, int], None] | None = None) -> None:
    """Write a snapshot's files into `directory` (which must not exist yet), each fsynced.
    `before_file(done, total)` is called before each file."""
    directory.mkdir(parents=True)
    total = len(tables) + len(spans) + 1
    step = before_file or (lambda _done, _total: None)
    for done, (table, frame) in enumerate(tables.items()):
        step(done, total)
        _write_ipc(_arrow_table(frame, table), directory / f"{table}.arrow")
    for done, (name, frame) in enumerate(spans.items(), start=len(tables)):
        step(done, total)
        _write_ipc(frame.to_arrow(), directory / f"spans-{name}.arrow")
    step(total - 1, total)
    with open(directory / META_FILE, "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())


def meta_record(generation: int, partitions: list[str], versions: Mapping[str, Mapping[date, int]]) -> dict[str, Any]:
    return {
        "generation": generation,
        "partitions": sorted(partitions),
        "versions": {table: {day.isoformat(): g for day, g in sorted(days.items())} for table, days in versions.items()},
    }


# ---------------------------------------------------------------------------------------------
# Reading (mapping)


def _mapped(path: Path) -> pa.Table:
    source = pa.memory_map(str(path), "r")
    return pa.ipc.open_file(source).read_all()


def _column(chunked: pa.ChunkedArray) -> pl.Series:
    """A mapped column as polars, without copying its buffers."""
    array = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
    if isinstance(array, pa.DictionaryArray):
        categories = pl.Series(array.dictionary.to_pylist(), dtype=pl.String)
        return pl.Series(array.indices).cat.to(pl.Enum(categories))
    return pl.Series(array)


def read_table(path: Path, table: str) -> pl.DataFrame:
    """A table file of a snapshot, mapped (see the module's docstring)."""
    mapped = _mapped(path)
    frame = pl.DataFrame([_column(mapped.column(name)).alias(name) for name in mapped.column_names])
    if not frame.height:  # polars gives an empty dictionary column its own type; the schema is the table's
        return encode(frame, table)
    return frame


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


def read(directory: Path) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame], dict[str, Any]]:
    """(tables, spans, meta) of the snapshot in `directory`; FileNotFoundError when it is gone."""
    meta = read_meta(directory)
    tables = {table: read_table(directory / f"{table}.arrow", table) for table in schema.TABLES}
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
