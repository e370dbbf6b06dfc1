"""Frames to bytes: the JSON envelope and RFC 4180 CSV. No per-row Python objects on this path:
records are serialised by polars and spliced into the envelope."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from polars._typing import PolarsDataType  # a data type or its class (pl.String)

from flatcolumns import PAIR, flat_columns
from service.api.disclaimer import DISCLAIMER

_ISO_Z = "%Y-%m-%dT%H:%M:%SZ"
# Cells starting with these may be run as formulas by spreadsheet programs (OWASP CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _with_text_timestamps(frame: pl.DataFrame) -> pl.DataFrame:
    temporal = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.Datetime)]
    if not temporal:
        return frame
    return frame.with_columns(pl.col(temporal).dt.convert_time_zone("UTC").dt.strftime(_ISO_Z))


def json_envelope(head: Mapping[str, Any], records_field: str, frame: pl.DataFrame) -> bytes:
    """`{...head, <records_field>: [...frame rows...], "disclaimer": ...}` as UTF-8 bytes."""
    parts = [f"{json.dumps(key)}:{json.dumps(value, ensure_ascii=False)}" for key, value in head.items()]
    parts.append(f"{json.dumps(records_field)}:{_with_text_timestamps(frame).write_json()}")
    parts.append(f'"disclaimer":{json.dumps(DISCLAIMER)}')
    return ("{" + ",".join(parts) + "}").encode()


def _shape(dtype: PolarsDataType) -> Any:
    """A column's shape for flatcolumns/: a struct's members, a list as a pair."""
    if isinstance(dtype, pl.Struct):
        return {f.name: _shape(f.dtype) for f in dtype.fields}
    return PAIR if isinstance(dtype, (pl.List, pl.Array)) else None


def _value(path: tuple[Any, ...]) -> pl.Expr:
    expr = pl.col(path[0])
    for step in path[1:]:
        expr = expr.list.get(step) if isinstance(step, int) else expr.struct.field(step)
    return expr


def flattened(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested fields as plain columns, for CSV, named by the consumers' rule (flatcolumns/):
    previous_suppressions, change_suppressions_pct, intervals_suppressions_low and _high."""
    shape = {name: _shape(dtype) for name, dtype in frame.schema.items()}
    return frame.select(_value(path).alias(name) for name, path in flat_columns(shape))


def csv_body(frame: pl.DataFrame) -> bytes:
    """RFC 4180 CSV (CRLF, quoted where needed) with a UTF-8 byte order mark so that Excel reads
    non-ASCII labels correctly; text cells that a spreadsheet would run as a formula get a
    leading apostrophe. Nested fields (compare, intervals) become columns of their own (`flattened`)."""
    frame = flattened(frame)
    text_columns = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    if text_columns:
        frame = frame.with_columns(
            pl.when(pl.any_horizontal(pl.col(name).str.starts_with(p) for p in _FORMULA_START))
            .then(pl.lit("'") + pl.col(name))
            .otherwise(pl.col(name))
            .alias(name)
            for name in text_columns
        )
    return b"\xef\xbb\xbf" + _with_text_timestamps(frame).write_csv(line_terminator="\r\n").encode()


def csv_filename(window: str, as_of: dt.datetime) -> str:
    return f"signals-query-{window}-{as_of.astimezone(dt.UTC):%Y%m%dT%H%MZ}.csv"
