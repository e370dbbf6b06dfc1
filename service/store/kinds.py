"""Kinds of values and what each column takes: the type rules of the ingest contract
(docs/data.md, "The contract"), shared by the column checks and the row validator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

# What each column takes (module docstring); a column not listed is text.
TEXT, ID, INTEGER_FIELD, TIMESTAMP = "text", "id", "integer", "timestamp"
COLUMN_TYPES: dict[str, str] = {
    "ts": TIMESTAMP,
    "user_id": ID,
    "county": ID,
    "city": ID,
    "suppressions": INTEGER_FIELD,
}

# Kinds of values, as sources report them (`value_kinds`) and as dtypes map onto them: JSON's
# types with integral numbers told apart, plus what a Parquet column can hold besides.
STRING, INTEGER, NUMBER, BOOLEAN, LIST, OBJECT = "string", "integer", "number", "boolean", "list", "object"
DATETIME, DATE, BINARY = "datetime", "date", "binary"
JSON_KINDS = (STRING, INTEGER, NUMBER, BOOLEAN, LIST, OBJECT)

ACCEPTS: dict[str, frozenset[str]] = {
    TEXT: frozenset({STRING}),
    ID: frozenset({STRING, INTEGER}),
    INTEGER_FIELD: frozenset({INTEGER}),
    TIMESTAMP: frozenset({STRING, DATETIME}),
}
EXPECTED = {TEXT: "text", ID: "text or an integer", INTEGER_FIELD: "an integer", TIMESTAMP: "an ISO 8601 timestamp"}
DESCRIBED = {
    STRING: "a string",
    INTEGER: "a number",
    NUMBER: "a number",
    BOOLEAN: "a boolean",
    LIST: "a list",
    OBJECT: "an object",
    DATETIME: "a date/time",
    DATE: "a date",
    BINARY: "binary data",
}


def column_type(name: str) -> str:
    return COLUMN_TYPES.get(name, TEXT)


def dtype_kind(dtype: pl.DataType) -> str | None:
    """The kind of every value of a column of `dtype` (None: only nulls; numbers: see `as_text`)."""
    if dtype == pl.Null:
        return None
    if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum)):
        return STRING
    if dtype.is_integer():
        return INTEGER
    if dtype.is_float() or dtype.is_decimal():
        return NUMBER
    if dtype == pl.Boolean:
        return BOOLEAN
    if isinstance(dtype, (pl.List, pl.Array)):
        return LIST
    if isinstance(dtype, pl.Struct):
        return OBJECT
    if isinstance(dtype, pl.Datetime):
        return DATETIME
    if dtype == pl.Date:
        return DATE
    if dtype == pl.Binary:
        return BINARY
    return f"a value of type {dtype}"


def described(kind: str) -> str:
    return DESCRIBED.get(kind, kind)


# The kinds of a column's values that its type does not take: None (all fine), one kind for
# every given value, or a kind per row (null where the value is fine or null).
BadKinds = str | pl.Series | None


def is_integral(as_float: pl.Series) -> pl.Series:
    return as_float.is_finite() & (as_float == as_float.floor()) & (as_float.abs() < 2.0**63)


def as_text(
    series: pl.Series, accepts: frozenset[str], *, kinds: pl.Series | None = None, zero_pad: int = 0
) -> tuple[pl.Series, BadKinds]:
    """(the values as trimmed text with '' as null, the kinds of values the column does not take).

    `kinds` gives each value's kind when the column mixes them (its values are then text: JSON
    scalars in their JSON spelling). Integers are written in digits (an integral float without
    ".0") and zero-padded to `zero_pad` digits; values of kinds the column does not take keep a
    text form only for messages.
    """
    if kinds is not None:
        text = series.cast(pl.String)
        if zero_pad:
            text = pl.select(pl.when(kinds == INTEGER).then(text.str.zfill(zero_pad)).otherwise(text)).to_series()
        found = pl.select(pl.when(kinds.is_in(sorted(accepts)).not_()).then(kinds)).to_series()
        bad: BadKinds = None if found.null_count() == found.len() else found
    else:
        dtype = series.dtype
        kind = dtype_kind(dtype)
        bad = kind if kind is not None and kind not in accepts else None
        if kind == INTEGER:
            text = series.cast(pl.String)
            if zero_pad:
                text = text.str.zfill(zero_pad)
        elif kind == NUMBER:
            # JSON numbers: integral ones are integers (`2.0`), the others are not (`2.5`).
            as_float = series.cast(pl.Float64)
            integral = is_integral(as_float)
            text = pl.select(
                pl.when(integral).then(as_float.cast(pl.Int64, strict=False).cast(pl.String))
                .otherwise(as_float.cast(pl.String))
            ).to_series()
            if zero_pad:
                text = pl.select(pl.when(integral).then(text.str.zfill(zero_pad)).otherwise(text)).to_series()
            if INTEGER in accepts:
                bad = pl.select(pl.when(integral.not_() & as_float.is_not_null()).then(pl.lit(NUMBER))).to_series()
                if bad.null_count() == bad.len():
                    bad = None
        elif kind in (STRING, None, DATETIME, DATE):
            text = series.cast(pl.String)
        else:  # lists, objects, binary: no text form worth showing
            text = pl.Series(series.name, [None] * series.len(), dtype=pl.String)
    text = text.str.strip_chars()
    return pl.select(pl.when(text != "").then(text)).to_series().rename(series.name), bad


def map_distinct(series: pl.Series, fn: Callable[[Any], Any], dtype: pl.DataType) -> pl.Series:
    """Apply a Python function once per distinct non-null value."""
    distinct = series.drop_nulls().unique()
    if distinct.len() == 0:
        return pl.Series(series.name, [None] * series.len(), dtype=dtype)
    mapped = pl.Series([fn(v) for v in distinct.to_list()], dtype=dtype)
    return spread(series, distinct, mapped).rename(series.name)


def spread(series: pl.Series, distinct: pl.Series, mapped: pl.Series) -> pl.Series:
    """`mapped[i]` wherever `series` holds `distinct[i]` (null where it is null): one hash lookup a
    row. (An Enum cast of the text and a gather of its codes, used before, took 0.9 to 1.5 times
    as long on the columns of a million bench events, and 2.9 times for the user ids' hashes.)"""
    return series.replace_strict(distinct, mapped, default=None, return_dtype=mapped.dtype)
