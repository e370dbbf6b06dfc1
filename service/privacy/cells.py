"""What a published number is (`Published`), the cells of a frame (`CellContext`), and each cell's
canonical description, which its noise is drawn from (the package docstring, point 1)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence

import polars as pl

from service.windows import TimeRange, bucket_step


@dataclasses.dataclass(frozen=True)
class Published:
    """One published number of a cell: the frame column holding its true value, and which
    measure it is. `period` and `extra` make it a different cell than the row's own (trending's
    recent and baseline periods; keyword activity's per-action counts). `users` is the frame
    column with the true user count of that cell, which decides suppression.

    A summed measure (suppressions, events) has no true value in the frame: the frame holds its
    pilot sum in `<column>_pilot`, and the stage computes the capped sum from `Contributions`."""

    column: str
    measure: str
    users: str
    period: TimeRange | None = None
    extra: tuple[tuple[str, str], ...] = ()
    when_suppressed: str = "drop"  # "drop" the row | "zero" the cell's numbers


@dataclasses.dataclass(frozen=True)
class CellContext:
    """What identifies the cells of one aggregated frame."""

    table: str                                   # "suppressions" | "keyword_changes"
    dims: Sequence[str]                          # row columns identifying a cell ("ts" = bucket start)
    published: Sequence[Published]
    time_range: TimeRange                        # the range the cells cover (clips buckets)
    bucket: str | None = None                    # when "ts" in dims: hour | day | week
    fixed: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # filters, subject
    # UTC date -> last generation that changed it (EventFrames.versions[table]); missing = 0.
    versions: Mapping[dt.date, int] = dataclasses.field(default_factory=dict)


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def data_version(versions: Mapping[dt.date, int], start: dt.datetime, end: dt.datetime) -> int:
    """The last generation that changed any date of [start, end): a cell's data version."""
    if not versions or end <= start:
        return 0
    day, last = start.astimezone(dt.UTC).date(), (end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
    version = 0
    while day <= last:
        version = max(version, versions.get(day, 0))
        day += dt.timedelta(days=1)
    return version


def _values_text(values: Sequence[str]) -> str:
    """Length-prefixed, sorted, distinct: unambiguous whatever characters the values hold."""
    distinct = sorted(set(values))
    return f"{len(distinct)}:" + "".join(f"{len(v.encode())}:{v}" for v in distinct)


def cell_messages(frame: pl.DataFrame, cell: CellContext, published: Published) -> list[str]:
    """The canonical description of each row's cell for one Published group."""
    row_dims = [d for d in cell.dims if d != "ts"]
    constraints: dict[str, pl.Expr] = {}
    for dim, values in cell.fixed.items():
        if dim not in row_dims:
            constraints[dim] = pl.lit(f"{dim}={_values_text(values)}")
    for dim, value in published.extra:
        constraints[dim] = pl.lit(f"{dim}={_values_text([value])}")
    for dim in row_dims:
        column = pl.col(dim)
        constraints[dim] = pl.concat_str(
            [pl.lit(f"{dim}=1:"), column.str.len_bytes().cast(pl.String), pl.lit(":"), column]
        )
    if published.period is not None or "ts" not in cell.dims:
        span = published.period or cell.time_range
        version = data_version(cell.versions, span.start, span.end)
        time_parts = [pl.lit(f"{version}|{_iso(span.start)}/{_iso(span.end)}")]
    else:
        # One range per bucket, clipped to the window; each with the version of its own dates.
        assert cell.bucket is not None
        window, step = cell.time_range, bucket_step(cell.bucket)
        spans = {}
        for start in frame.get_column("ts").unique().to_list():
            span_start, span_end = max(start, window.start), min(start + step, window.end)
            version = data_version(cell.versions, span_start, span_end)
            spans[start] = f"{version}|{_iso(span_start)}/{_iso(span_end)}"
        time_parts = [pl.col("ts").replace_strict(spans, return_dtype=pl.String)]
    parts = [pl.lit(f"v3|{cell.table}|"), *time_parts]
    for dim in sorted(constraints):
        parts += [pl.lit("|"), constraints[dim]]
    return frame.select(pl.concat_str(parts).alias("m")).get_column("m").to_list()
