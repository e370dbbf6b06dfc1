"""Ordering and limiting published cells, and counting the rows of the full answer (paging)."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator, Sequence

import polars as pl


@dataclasses.dataclass
class RowCount:
    """The number of rows the full answer holds: every published row that ranks, before the
    page (`limit` rows from `offset`) is cut from it."""

    total: int | None = None


# Set by `counting_rows` around one computation of an answer (service/answers/serving.py); the
# first ranking cut inside it (the answer's own records: compare computes the period before after
# them) notes how many rows it cut from.
_COUNTING: contextvars.ContextVar[RowCount | None] = contextvars.ContextVar("signals_row_count", default=None)


@contextlib.contextmanager
def counting_rows() -> Iterator[RowCount]:
    """Within it, `first_rows` notes in the yielded RowCount how many rows the full answer holds."""
    count = RowCount()
    token = _COUNTING.set(count)
    try:
        yield count
    finally:
        _COUNTING.reset(token)


def first_rows(frame: pl.DataFrame, by: Sequence[str], descending: Sequence[bool], limit: int,
               offset: int = 0) -> pl.DataFrame:
    """Rows `offset` to `offset + limit` of `frame` sorted by `by` (each column descending or not):
    with offset 0, the first `limit` rows.

    A partial top-k selection followed by a sort of only the selected rows: a /query grouped by
    keyword and day has hundreds of thousands of cells, of which at most 1000 are returned, and
    sorting all of them would cost more than the aggregation. `by` must identify a row (measure
    plus the cell's dimensions), so which rows make the cut is well defined even with ties, and a
    page is exactly those rows of the un-paged order. Dimension columns must be strings here
    (`measures.as_strings`), never stored Enums: their codes do not follow string order.
    """
    count = _COUNTING.get()
    if count is not None and count.total is None:
        count.total = frame.height
    columns, order = list(by), list(descending)
    end = offset + limit
    if frame.height <= end:
        ordered = frame.sort(columns, descending=order)
    else:
        ordered = frame.top_k(end, by=columns, reverse=[not d for d in descending]).sort(columns, descending=order)
    return ordered.slice(offset, limit) if offset else ordered
