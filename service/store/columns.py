"""The ingest contract's file-level checks: which table a file is, its columns and their types
(a misfit refuses the whole file with `ContractError`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

import polars as pl

from service.store import schema
from service.store.kinds import ACCEPTS, EXPECTED, column_type, dtype_kind

OPTIONAL_COLUMNS = frozenset({"region", "county", "city"})


class ContractError(ValueError):
    """The file as a whole does not fit the contract (missing/unknown columns or column types)."""


def required_columns(table: str) -> tuple[str, ...]:
    return tuple(c for c in schema.SCHEMAS[table] if c not in OPTIONAL_COLUMNS)


def detect_table(columns: Iterable[str]) -> str:
    """The table a file belongs to: `action` -> keyword_changes, `suppressions` -> suppressions."""
    names = set(columns)
    has_action, has_count = "action" in names, "suppressions" in names
    if has_action and not has_count:
        return schema.KEYWORD_CHANGES
    if has_count and not has_action:
        return schema.SUPPRESSIONS
    if has_action and has_count:
        raise ContractError(
            "cannot tell the table: the file has both an 'action' column (keyword_changes) and a "
            "'suppressions' column (suppressions); pass the table explicitly"
        )
    raise ContractError(
        "cannot tell the table: the file has neither an 'action' column (keyword_changes) nor a "
        "'suppressions' column (suppressions); pass the table explicitly"
    )


def check_columns(table: str, columns: Iterable[str]) -> None:
    """Raise ContractError naming missing required columns and unknown columns."""
    if table not in schema.SCHEMAS:
        raise ContractError(f"unknown table {table!r}; expected one of {', '.join(schema.TABLES)}")
    names = list(columns)
    known = schema.SCHEMAS[table]
    problems = []
    missing = [c for c in required_columns(table) if c not in names]
    if missing:
        problems.append(f"missing required column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    unknown = [c for c in names if c not in known]
    if unknown:
        described = []
        for name in unknown:
            close = difflib.get_close_matches(name.lower(), list(known), n=1)
            described.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        problems.append(f"unknown column{'s' if len(unknown) > 1 else ''} for table {table}: {', '.join(described)}")
    if problems:
        raise ContractError("; ".join(problems) + f". Columns of {table}: {', '.join(known)}")


def check_column_types(table: str, dtypes: Mapping[str, pl.DataType], source: str = "this file") -> None:
    """Raise ContractError naming every column whose type cannot hold the column's values.

    For sources whose columns have one type each (Parquet): a boolean `keyword` column or a float
    `suppressions` column is wrong for every row, so the file is refused as a whole. A float
    column is not an integer column here, even when its values happen to be integral.
    """
    wrong = []
    for name, dtype in dtypes.items():
        if name not in schema.SCHEMAS[table]:
            continue
        kind = dtype_kind(dtype)
        expected = column_type(name)
        if kind is not None and kind not in ACCEPTS[expected]:
            wrong.append(f"{name!r} is {dtype} (expected {EXPECTED[expected]})")
    if wrong:
        raise ContractError(f"wrong column type{'s' if len(wrong) > 1 else ''} in {source}: {', '.join(wrong)}")
