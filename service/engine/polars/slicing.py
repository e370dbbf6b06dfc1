"""Cutting a time range out of an event table.

The store keeps every table sorted by `ts`, so the rows of [start, end) are one contiguous run:
two binary searches find it and `slice` returns it without copying. Every query starts here
instead of filtering the whole table.
"""

from __future__ import annotations

import polars as pl

from service.api.windows import TimeRange, polars_every

# Rows per part when a grouping by time bucket is cut into parts (`bucket_parts`): large enough
# that the per-part overhead is small next to the work, small enough that the per-(cell, user)
# hash table of a part stays a few hundred MiB however long the window (a part is at least one
# bucket, so a bucket holding more rows, a week of a very large store, is one larger part).
PART_ROWS = 4_000_000


def time_slice(frame: pl.DataFrame, time_range: TimeRange) -> pl.DataFrame:
    """The rows with `start <= ts < end` of a frame sorted by `ts` (a zero-copy view)."""
    ts = frame.get_column("ts")
    start = int(ts.search_sorted(time_range.start, side="left"))
    end = int(ts.search_sorted(time_range.end, side="left"))
    return frame.slice(start, max(end - start, 0))


def bucket_parts(frame: pl.DataFrame, bucket: str, rows: int | None = None) -> list[pl.DataFrame]:
    """A frame sorted by `ts` as consecutive zero-copy parts of about `rows` rows, each cut at the
    start of a time bucket (`bucket`: hour, day, week, as `contributions.bucket_key` truncates), so
    that every bucket lies whole in one part. A grouping whose keys include that bucket can then
    be computed part by part: no cell spans two parts. A bucket holding more than `rows` rows
    stays one part. `rows` defaults to PART_ROWS."""
    rows = rows or PART_ROWS
    ts = frame.get_column("ts")
    cuts = [0]
    for at in range(rows, frame.height, rows):
        # The start of the bucket of row `at`: the part ends before that bucket's first row.
        start = ts.slice(at, 1).dt.truncate(polars_every(bucket))
        cut = int(ts.search_sorted(start, side="left")[0])
        if cut > cuts[-1]:
            cuts.append(cut)
    cuts.append(frame.height)
    return [frame.slice(begin, end - begin) for begin, end in zip(cuts, cuts[1:], strict=False)]
