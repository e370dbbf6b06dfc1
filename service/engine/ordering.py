"""Ordering and limiting published cells."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


def first_rows(frame: pl.DataFrame, by: Sequence[str], descending: Sequence[bool], limit: int) -> pl.DataFrame:
    """The first `limit` rows of `frame` sorted by `by` (each column descending or not).

    A partial top-k selection followed by a sort of only the selected rows: a /query grouped by
    keyword and day has hundreds of thousands of cells, of which at most 1000 are returned, and
    sorting all of them would cost more than the aggregation. `by` must identify a row (measure
    plus the cell's dimensions), so which rows make the cut is well defined even with ties.
    Dimension columns must be strings here (`measures.as_strings`), never stored Enums: their
    codes do not follow string order.
    """
    columns, order = list(by), list(descending)
    if frame.height <= limit:
        return frame.sort(columns, descending=order)
    return frame.top_k(limit, by=columns, reverse=[not d for d in descending]).sort(columns, descending=order)
