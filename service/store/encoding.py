"""The in-memory form of an event table, as the engine reads it and a snapshot stores it: the
stored schema's columns, dimension columns as `Enum` (their codes are what a snapshot's dictionary
columns hold), sorted by ts; and the append-only dictionaries of a segmented snapshot (the rules:
snapshot.py's docstring)."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from service.store import schema


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
