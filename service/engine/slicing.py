"""Cutting a time range out of an event table.

The store keeps every table sorted by `ts`, so the rows of [start, end) are one contiguous run:
two binary searches find it and `slice` returns it without copying. Every query starts here
instead of filtering the whole table.
"""

from __future__ import annotations

import polars as pl

from service.windows import TimeRange


def time_slice(frame: pl.DataFrame, time_range: TimeRange) -> pl.DataFrame:
    """The rows with `start <= ts < end` of a frame sorted by `ts` (a zero-copy view)."""
    ts = frame.get_column("ts")
    start = int(ts.search_sorted(time_range.start, side="left"))
    end = int(ts.search_sorted(time_range.end, side="left"))
    return frame.slice(start, max(end - start, 0))
