"""What a published number is (`Published`), the cells of a frame (`CellContext`), and each cell's
canonical description, which its noise is drawn from (the package docstring, point 1)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence

import polars as pl

from service.api.windows import TimeRange, bucket_step
from service.privacy.params import PrivacyParams
from service.store.schema import GEO_LEVELS

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


def _hours(moment: dt.datetime) -> int:
    """Whole hours since the epoch (floored): where a range's ends fall among the time blocks."""
    return int(moment.timestamp() // 3600)


@dataclasses.dataclass(frozen=True)
class Seeds:
    """What each row's noise is drawn from (`noise.draws`): one description per time level and
    row, and the row's weight at that level (0: the row's range has no such level; its description
    is then the empty string and not read). Level 0 is the cell's own description (its range and
    data version); level l > 0 is the cell's meaning with the blocks of 2^l hours that its range's
    start and end fall in (no data version): ranges that start and end in the same blocks share it.
    A row's noise is the sum over its levels of the level's draw times the weight; the squares of a
    row's weights add up to 1, so its noise has the variance of one draw (docs/privacy.md, "How
    it works", point 3).

    `messages` holds each level's descriptions (String) and weights (Float64); `repeats` says
    whether rows may share a description (bucketed rows: the empty one, or a block two buckets
    share), so that `noise.draws` looks for repeats to hash each description once; rows of one
    range, one a cell, repeat none worth looking for."""

    messages: tuple[tuple[pl.Series, pl.Series], ...]
    repeats: bool = True

    @property
    def levels(self) -> list[tuple[list[str], pl.Series]]:
        """Each level's descriptions as a list, and its weights."""
        return [(messages.to_list(), weights) for messages, weights in self.messages]


def time_levels(start: dt.datetime, end: dt.datetime, version: int, params: PrivacyParams) -> list[tuple[int, float, str]]:
    """A range's time levels: (level, weight, the time part of its description at that level).

    Level 0, weight sqrt(time_base_share): "version|start/end", as every cell was described before.
    The time_top_levels largest levels l >= 1 with 2^l <= time_span_blocks x the range's length in
    hours share the rest of the variance equally: "T<l>|<start hour // 2^l>/<end hour // 2^l>"
    (a 30-day window: blocks of 256, 512 and 1,024 hours; a day: 8, 16 and 32). Two ranges of the
    same length that share a level overlap (2^l is at most twice their length), so disjoint ranges
    (the buckets of a series) never share noise, while a window moved by an hour keeps most of it."""
    base = f"{version}|{_iso(start)}/{_iso(end)}"
    first, last = _hours(start), _hours(end)
    span = max(last - first, 0)
    upper = [level for level in range(1, 63) if 2 ** level <= params.time_span_blocks * span][-params.time_top_levels:]
    if not upper:
        return [(0, 1.0, base)]
    share = (1.0 - params.time_base_share) / len(upper)
    return [(0, params.time_base_share ** 0.5, base)] + [
        (level, share ** 0.5, f"T{level}|{first >> level}/{last >> level}") for level in upper]


def _constraints(cell: CellContext, published: Published) -> list[pl.Expr]:
    """The description of each row's cell apart from its time: its dimension values and filters."""
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
    parts: list[pl.Expr] = []
    for dim in sorted(constraints):
        parts += [pl.lit("|"), constraints[dim]]
    return parts


def _row_levels(frame: pl.DataFrame, cell: CellContext, published: Published,
                params: PrivacyParams) -> tuple[bool, dict[object, list[tuple[int, float, str]]]]:
    """Whether each row has its own range (a bucket: keyed by `ts`; else one range, keyed "all"),
    and each range's time levels."""
    if published.period is not None or "ts" not in cell.dims:
        span = published.period or cell.time_range
        version = data_version(cell.versions, span.start, span.end)
        return False, {"all": time_levels(span.start, span.end, version, params)}
    # One range per bucket, clipped to the window; each with the version of its own dates.
    assert cell.bucket is not None
    window, step = cell.time_range, bucket_step(cell.bucket)
    spans = {}
    for start in frame.get_column("ts").unique().to_list():
        span_start, span_end = max(start, window.start), min(start + step, window.end)
        spans[start] = time_levels(span_start, span_end, data_version(cell.versions, span_start, span_end), params)
    return True, spans


def cell_seeds(frame: pl.DataFrame, cell: CellContext, published: Published, params: PrivacyParams) -> Seeds:
    """Each row's noise seeds for one Published group (`Seeds`)."""
    by_bucket, spans = _row_levels(frame, cell, published, params)
    constraints = _constraints(cell, published)
    depth = max(len(levels) for levels in spans.values()) if spans else 1
    columns: list[pl.Expr] = []
    for index in range(depth):
        texts = {k: levels[index][2] for k, levels in spans.items() if index < len(levels)}
        weights = {k: levels[index][1] for k, levels in spans.items() if index < len(levels)}
        if by_bucket:
            time_part = pl.col("ts").replace_strict(texts, default=None, return_dtype=pl.String)
            weight = pl.col("ts").replace_strict(weights, default=0.0, return_dtype=pl.Float64)
        else:
            time_part, weight = pl.lit(texts.get("all")), pl.lit(weights.get("all", 0.0))
        columns += [pl.concat_str([pl.lit(f"v3|{cell.table}|"), time_part, *constraints]).fill_null("").alias(f"m{index}"),
                    weight.cast(pl.Float64).alias(f"w{index}")]
    rows = frame.select(columns)  # every level at once
    return Seeds(tuple((rows.get_column(f"m{index}"), rows.get_column(f"w{index}")) for index in range(depth)),
                 repeats=by_bucket)


def cell_messages(frame: pl.DataFrame, cell: CellContext, published: Published) -> list[str]:
    """The canonical description of each row's cell for one Published group (its level-0 seed:
    its range and data version; `cell_seeds` adds the time levels)."""
    return cell_seeds(frame, cell, published, PrivacyParams()).levels[0][0]


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


def _family_constraints(cell: CellContext, published: Published, dimension: str) -> str:
    constraints = {dim: f"{dim}={_values_text(values)}" for dim, values in cell.fixed.items()
                   if dim not in cell.dims and dim != dimension}
    for dim, value in published.extra:
        constraints[dim] = f"{dim}={_values_text([value])}"
    constraints[dimension] = f"{dimension}=*"
    return "|".join(constraints[dim] for dim in sorted(constraints))


def family_seeds(cell: CellContext, published: Published, dimension: str, params: PrivacyParams) -> Seeds:
    """The family's noise seed: `family_message`, its range's own level only (weight 1)."""
    span = published.period or cell.time_range
    version = data_version(cell.versions, span.start, span.end)
    constraints = _family_constraints(cell, published, dimension)
    # Level 0 alone: the family's releases set caps, as the pilots do (noise.noisy).
    text = time_levels(span.start, span.end, version, params)[0][2]
    return Seeds(((pl.Series([f"v3f|{cell.table}|{text}|{constraints}"], dtype=pl.String), pl.Series([1.0])),),
                 repeats=False)


def family_message(cell: CellContext, published: Published, dimension: str) -> str:
    """The canonical description of the family of a Published group's cells (`family_dimension`):
    the cells' own description with `dimension` free, under its own prefix (no cell has it)."""
    span = published.period or cell.time_range
    version = data_version(cell.versions, span.start, span.end)
    return f"v3f|{cell.table}|{version}|{_iso(span.start)}/{_iso(span.end)}|" + \
        _family_constraints(cell, published, dimension)
