"""The ingest contract's row validator: which raw rows may enter the store, and in what form (DESIGN "Event data").

The contract (the columns, the types each takes in each file format, each column's rule) is
docs/data.md, "The contract". `validate_rows` takes a frame of raw rows as read from a file (any
dtypes) and splits it into rows in exactly the stored schema (`schema.SCHEMAS`) and rejected rows,
each with a readable reason naming the column and the problem (several problems of one row are
joined with "; "); a file whose columns do not fit the table is refused whole (`ContractError`).

Types are checked on every value before anything is converted: a value of a type its column does
not take is rejected with "<column>: expected <type>, got <kind>", never turned into text. Where
the values come from tells their types: the frame's dtypes (Parquet, JSON read as a whole), a kind
per value (`value_kinds`: JSON lines whose types differ), or nothing at all (`text_cells`: CSV,
where every cell is text). Surrounding whitespace is trimmed; an empty string is a null.

The work is vectorised with polars; Python runs once per distinct value where a rule needs it
(keyword/domain normalisation, hashing, unusual timestamp spellings). The contract by role: the
type rules in kinds.py, the file-level checks in columns.py, the column checks in row_checks.py
(timestamps: timestamps.py; country, region, county, city: geography.py), the domain rule in
domains.py, the hashing of user ids in user_ids.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

import polars as pl

from service.store import schema
from service.store.columns import check_columns
from service.store.geography import check_country, check_geography
from service.store.row_checks import Rows

REJECTED_SCHEMA: dict[str, pl.DataType] = {"row_number": pl.Int64(), "reason": pl.String(), "row": pl.String()}


def validate_rows(
    frame: pl.DataFrame,
    table: str,
    *,
    now: dt.datetime,
    secret: str,
    row_numbers: pl.Series | None = None,
    source_rows: pl.Series | None = None,
    text_cells: bool = False,
    value_kinds: Mapping[str, pl.Series] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split raw rows into (good rows in the stored schema, rejected rows).

    `row_numbers` are the 1-based positions of the rows in their source (default 1..n);
    `source_rows` the original text of each row as JSON (default: the row encoded as a JSON
    object). Rejected rows come back as `row_number`, `reason`, `row` (JSON text), in input order.

    Types (module docstring): by default a value's type is its column's dtype, a float being an
    integer where it is integral (JSON numbers). `value_kinds` gives, for columns whose values
    differ in type, the kind of each value (one of `JSON_KINDS`, null for a null) while the
    column holds the values as text. `text_cells` says every cell is text (CSV).
    Raises ContractError when the columns do not fit the table.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    check_columns(table, frame.columns)
    n = frame.height
    if row_numbers is None:
        row_numbers = pl.Series("row_number", range(1, n + 1), dtype=pl.Int64)
    if row_numbers.len() != n or (source_rows is not None and source_rows.len() != n):
        raise ValueError("row_numbers and source_rows must have one entry per row")
    kinds = dict(value_kinds or {})
    if any(series.len() != n for series in kinds.values()):
        raise ValueError("value_kinds must have one entry per row")

    rows = Rows(frame, table, text_cells=text_cells, kinds=kinds)
    checks: list[Callable[[Rows], object]] = [
        lambda r: r.check_ts(now),
        lambda r: r.check_user_id(secret),
        Rows.check_keyword,
        lambda r: r.check_enum("platform", schema.PLATFORMS),
    ]
    if table == schema.SUPPRESSIONS:
        checks += [lambda r: r.check_enum("page_context", schema.PAGE_CONTEXTS), Rows.check_domain,
                   check_geography, Rows.check_count]
    else:
        checks += [lambda r: r.check_enum("action", schema.ACTIONS), check_country]
    rows.run(checks)

    work = rows.work_frame()
    reason = work.select(pl.concat_str(rows.reasons, separator="; ", ignore_nulls=True)).to_series()
    ok = reason == ""
    passed = work.filter(ok)
    good = passed.select(
        [
            pl.col("user_id__hashed").alias("user_id") if name == "user_id" else pl.col(name).cast(dtype)
            for name, dtype in schema.SCHEMAS[table].items()
        ]
    )
    bad = ok.not_()
    rejected = pl.DataFrame(
        {
            "row_number": row_numbers.filter(bad).cast(pl.Int64),
            "reason": reason.filter(bad),
            # A source row may still end with its line end (NDJSON read whole): cut it off here,
            # for the rejected rows only.
            "row": source_rows.filter(bad).cast(pl.String).str.strip_chars_end("\r\n")
            if source_rows is not None
            else _rows_as_json(frame.filter(bad)),
        },
        schema=REJECTED_SCHEMA,
    )
    return good, rejected


def _rows_as_json(frame: pl.DataFrame) -> pl.Series:
    if frame.width == 0:
        return pl.Series("row", ["{}"] * frame.height, dtype=pl.String)
    try:
        return frame.select(pl.struct(pl.all()).struct.json_encode()).to_series()
    except pl.exceptions.PolarsError:
        # Some dtypes (binary, objects) have no JSON form; show them as text instead.
        as_text = frame.select(pl.all().cast(pl.String, strict=False))
        return as_text.select(pl.struct(pl.all()).struct.json_encode()).to_series()
