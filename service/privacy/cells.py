"""What a published number is (`Published`), the cells of a frame (`CellContext`), and each cell's
canonical description, which its noise is drawn from (the package docstring, point 1)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence

import polars as pl

from service.store.schema import GEO_LEVELS
from service.windows import TimeRange, bucket_step

# A cell's family (`family_dimension`): the places of one geographic level, everything else about
# them alike, over more than a week.
FAMILY_DIMENSIONS = GEO_LEVELS
FAMILY_MIN_SPAN = dt.timedelta(days=7)


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


def family_dimension(dims: Sequence[str], fixed: Mapping[str, Sequence[str]], span: TimeRange,
                     extra: Sequence[tuple[str, str]] = ()) -> str | None:
    """The dimension along which a cell's family varies, or None when the cell has no family.

    A cell (grouped by `dims`, under the filters `fixed`, over `span`) is in a family when exactly
    one dimension holds it to a single value (a grouped value, a filter of one value or an `extra`
    constraint), that dimension is a geographic level, and its range is longer than a week. Its
    family is every place of that level with everything else alike: the other filters, the range,
    the data version. The rule reads only the cell's description, so a cell is in the same family
    in every answer that holds it, and gets the same cap and noise. Over a week or less, no
    family: a time bucket is a cell of at most a week, and a 24-hour window ending at midnight is a
    day bucket as well, whose family a series could not afford to compute."""
    if "ts" in dims or span.end - span.start <= FAMILY_MIN_SPAN:
        return None
    single = [*dims, *(dim for dim, _value in extra if dim not in dims)]
    single += [dim for dim, values in fixed.items() if dim not in single and len(set(values)) == 1]
    return single[0] if len(single) == 1 and single[0] in FAMILY_DIMENSIONS else None


def family_in_frame(dims: Sequence[str], fixed: Mapping[str, Sequence[str]], dimension: str) -> bool:
    """Whether a frame grouped by `dims` under `fixed` holds the whole family along `dimension`:
    grouped by it and not filtered on it (an engine groups every place of the range)."""
    return dimension in dims and dimension not in fixed


def family_message(cell: CellContext, published: Published, dimension: str) -> str:
    """The canonical description of the family of a Published group's cells (`family_dimension`):
    the cells' own description with `dimension` free, under its own prefix (no cell has it)."""
    constraints = {dim: f"{dim}={_values_text(values)}" for dim, values in cell.fixed.items()
                   if dim not in cell.dims and dim != dimension}
    for dim, value in published.extra:
        constraints[dim] = f"{dim}={_values_text([value])}"
    constraints[dimension] = f"{dimension}=*"
    span = published.period or cell.time_range
    version = data_version(cell.versions, span.start, span.end)
    return f"v3f|{cell.table}|{version}|{_iso(span.start)}/{_iso(span.end)}|" + \
        "|".join(constraints[dim] for dim in sorted(constraints))
