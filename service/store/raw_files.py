"""What a file reader returns: the raw frame (`RawFile`), the error for a file that cannot be read
at all (`FileError`), and the small helpers every reader uses to number its rows and to frame the
rows it could not parse (`REJECTED_SCHEMA`). Apart from the readers (formats.py, ndjson.py,
csv_reader.py) so that each can import them without importing the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import polars as pl

from service.store.validate import REJECTED_SCHEMA


class FileError(Exception):
    """A file that cannot be ingested at all; the message says why."""


@dataclasses.dataclass
class RawFile:
    """A file as a raw frame, plus the rows that could not even be parsed."""

    frame: pl.DataFrame
    row_numbers: pl.Series
    source_rows: pl.Series | None
    unparsed: pl.DataFrame  # REJECTED_SCHEMA
    text_cells: bool = False  # every cell is text (CSV)
    value_kinds: dict[str, pl.Series] = dataclasses.field(default_factory=dict)  # columns of mixed types
    typed_columns: str | None = None  # "Parquet": one type per column, checked for the whole file


def no_rejects() -> pl.DataFrame:
    return pl.DataFrame(schema=REJECTED_SCHEMA)


def reject_frame(rows: Iterable[tuple[int, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=REJECTED_SCHEMA, orient="row")


def row_number_series(values: Iterable[int]) -> pl.Series:
    return pl.Series("row_number", list(values), dtype=pl.Int64)


def first_row_numbers(count: int) -> pl.Series:
    """1..count, without a Python integer each."""
    return pl.int_range(1, count + 1, eager=True, dtype=pl.Int64).alias("row_number")
