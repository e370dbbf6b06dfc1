"""Every endpoint's records as post-processing of the release (no noise is drawn here).

One function per operation of the endpoint table, `(release, as_of, request, noise) -> frame`,
the frame holding the endpoint's record fields in order; with `noise`, each count's noise s.d.
(`<field>_std`) for compare and intervals. `ReleaseEngine` (engine.py) serves them.

`POST /query` inside the menu: a group_by of at most one dimension (and `time`), filters on that
dimension only, is read from that dimension's table (a filter sums the released cells it lists;
a user count of several values is their sum of user-days over the repeat factor, which counts a
user of two listed values twice: an upper estimate). Totals (no group_by, no filter) are read
from the countries table: every event has a country and a user-day counts in one (from the
platforms table a user of two platforms counted twice: 30-day totals 68 % high). Anything else
is `OutsideMenu` (a 422 naming the tables that cover it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import polars as pl

from service.api.windows import TimeRange, bucket_starts, bucket_step, trending_periods, window_range
from service.engine.geo_labels import label_series
from service.engine.growth import CONFIDENCE_Z, with_growth_lower_bound, with_growth_pct
from service.engine.ordering import first_rows
from service.engine.requests import (
    FILTER_COLUMNS,
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.release import domains
from service.release.estimates import STD, distinct, repeat_factor, show_z, whole, window_days
from service.release.menu import (
    ADDS,
    EDITS,
    EVENTS,
    KEYWORD_DAYS,
    PLACE_TABLES,
    REMOVES,
    SUPPRESSION_TABLES,
    SUPPRESSIONS,
    TABLES_BY_NAME,
    USER_DAYS,
    Table,
)
from service.release.storage import CELL
from service.release.windows import VAR, Release

USERS = "_users"


class OutsideMenu(ValueError):
    """A /query whose shape no released table covers (the ad-hoc release is not built yet)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _cells(release: Release, table: Table, window: TimeRange, as_of: dt.datetime) -> pl.DataFrame:
    """The table's shown cells over the window: its sums, its users (`USERS`) and their variances."""
    frame = release.view(table.name).window(window.start, window.end)
    frame = frame.filter(pl.col(USER_DAYS) >= show_z(table) * pl.col(USER_DAYS + VAR).sqrt())
    factor = repeat_factor(release, table, USER_DAYS, window_days(window.start, window.end), as_of)
    return distinct(frame, USER_DAYS, factor, USERS).filter(pl.col(USERS) >= 0.5)


def _std(column: str) -> pl.Expr:
    return pl.col(column + VAR).sqrt()


def _consistent(frame: pl.DataFrame, users: str, name: str, *counts: str) -> pl.DataFrame:
    """The row's user count as published (`name`: whole), and each of `counts` (whole, smallest
    first: events, then suppressions) raised to at least the one before it (estimates.py)."""
    frame = frame.with_columns(whole(users).alias(name))
    floor = name
    for count in counts:
        frame = frame.with_columns(pl.max_horizontal(count, floor).alias(count))
        floor = count
    return frame


def top_keywords(release: Release, as_of: dt.datetime, req: TopKeywords, noise: bool = False) -> pl.DataFrame:
    table = TABLES_BY_NAME["keywords"]
    cells = _cells(release, table, window_range(req.window, as_of), as_of)
    shown = cells.select(pl.col(CELL).alias("keyword"), whole(SUPPRESSIONS).alias(SUPPRESSIONS),
                         whole(EVENTS).alias(EVENTS), pl.col(USERS),
                         _std(SUPPRESSIONS).alias(SUPPRESSIONS + STD), pl.col(USERS + STD).alias("users_est" + STD))
    shown = _consistent(shown, USERS, "users_est", EVENTS, SUPPRESSIONS)
    ranked = first_rows(shown, [SUPPRESSIONS, "keyword"], [True, False], req.limit, req.offset)
    return ranked.with_row_index("rank", offset=req.offset + 1).select(
        pl.col("keyword").alias("keyword_raw"), SUPPRESSIONS, "users_est", pl.col("rank").cast(pl.Int64),
        *([SUPPRESSIONS + STD, "users_est" + STD] if noise else []))


def _series(release: Release, table: Table, cell: str, window: TimeRange, bucket: str,
            as_of: dt.datetime, noise: bool) -> pl.DataFrame:
    starts = bucket_starts(window, bucket)
    step = bucket_step(bucket)
    ranges = [(max(start, window.start), min(start + step, window.end)) for start in starts]
    if not domains.is_public(table.dimension, cell):
        frame = pl.DataFrame({"ts": starts}, schema={"ts": pl.Datetime("us", "UTC")}).with_columns(
            *(pl.lit(0.0).alias(c) for m in table.measure_names for c in (m, m + VAR)))
    else:
        frame = release.view(table.name).buckets(cell, ranges).with_columns(pl.Series("ts", starts))
    factors = [repeat_factor(release, table, USER_DAYS, window_days(a, b), as_of) for a, b in ranges]
    frame = frame.with_columns(pl.Series("_factor", factors, dtype=pl.Float64))
    visible = pl.col(USER_DAYS) >= show_z(table) * pl.col(USER_DAYS + VAR).sqrt()
    out = frame.select(
        "ts",
        pl.when(visible).then(whole(SUPPRESSIONS)).otherwise(0).alias(SUPPRESSIONS),
        pl.when(visible).then(whole(EVENTS)).otherwise(0).alias(EVENTS),
        pl.when(visible).then(pl.col(USER_DAYS) / pl.col("_factor")).otherwise(0.0).alias(USERS),
        _std(SUPPRESSIONS).alias(SUPPRESSIONS + STD), _std(EVENTS).alias(EVENTS + STD),
        (_std(USER_DAYS) / pl.col("_factor")).alias("users_est" + STD))
    out = _consistent(out, USERS, "users_est", EVENTS, SUPPRESSIONS)
    return out.select("ts", SUPPRESSIONS, "users_est", EVENTS,
                      *([SUPPRESSIONS + STD, "users_est" + STD, EVENTS + STD] if noise else []))


def keyword_timeseries(release: Release, as_of: dt.datetime, req: KeywordTimeseries,
                       noise: bool = False) -> pl.DataFrame:
    return _series(release, TABLES_BY_NAME["keywords"], req.keyword, window_range(req.window, as_of),
                   req.bucket, as_of, noise)


def domain_timeseries(release: Release, as_of: dt.datetime, req: DomainTimeseries,
                      noise: bool = False) -> pl.DataFrame:
    return _series(release, TABLES_BY_NAME["domains"], req.domain, window_range(req.window, as_of),
                   req.bucket, as_of, noise)


def geo_heat(release: Release, as_of: dt.datetime, req: GeoHeat, noise: bool = False) -> pl.DataFrame:
    table = PLACE_TABLES[req.level]
    window = window_range(req.window, as_of)
    cells = _cells(release, table, window, as_of)
    keyword_factor = repeat_factor(release, table, KEYWORD_DAYS, window_days(window.start, window.end), as_of)
    cells = distinct(cells, KEYWORD_DAYS, keyword_factor, "_keywords")
    shown = cells.select(
        pl.col(CELL).alias("geo_key"), whole(SUPPRESSIONS).alias(SUPPRESSIONS), whole(EVENTS).alias(EVENTS),
        pl.col(USERS), pl.col("_keywords"),
        _std(SUPPRESSIONS).alias(SUPPRESSIONS + STD), pl.col(USERS + STD).alias("unique_users" + STD),
        pl.col("_keywords" + STD).alias("keyword_count" + STD))
    shown = _consistent(shown, USERS, "unique_users", EVENTS, SUPPRESSIONS).with_columns(
        whole("_keywords").clip(upper_bound=len(domains.values("keyword"))).alias("keyword_count"))
    # A place with users has at least one keyword behind them.
    shown = shown.with_columns(pl.when(pl.col("unique_users") > 0).then(pl.max_horizontal("keyword_count", 1))
                               .otherwise(pl.col("keyword_count")).alias("keyword_count"))
    ordered = shown.sort([SUPPRESSIONS, "geo_key"], descending=[True, False])
    return ordered.select(
        "geo_key", label_series("label", req.level, ordered.get_column("geo_key")), SUPPRESSIONS,
        "unique_users", "keyword_count",
        *([SUPPRESSIONS + STD, "unique_users" + STD, "keyword_count" + STD] if noise else []))


def _metric(cells: pl.DataFrame, metric: str, name: str) -> pl.DataFrame:
    if metric == "unique_users":
        return cells.select(CELL, pl.col(USERS).round(0).clip(lower_bound=0).alias(name),
                            pl.col(USERS + STD).alias(name + STD))
    return cells.select(CELL, whole(metric).alias(name), _std(metric).alias(name + STD))


def trending(release: Release, as_of: dt.datetime, req: Trending, confidence: float = CONFIDENCE_Z) -> pl.DataFrame:
    table = SUPPRESSION_TABLES[req.dimension]
    periods = trending_periods(req.window, as_of)
    recent = _metric(_cells(release, table, periods.recent, as_of), req.metric, "recent")
    baseline = _metric(_cells(release, table, periods.baseline, as_of), req.metric, "baseline")
    cells = baseline.join(recent, on=CELL, how="inner").rename({CELL: req.dimension})
    kept = cells.filter((pl.col("baseline") > 0) & (pl.col("baseline").cast(pl.Float64) >= float(req.min_baseline)))
    scored = with_growth_pct(kept, "recent", "baseline", periods.recent.hours, periods.baseline.hours)
    bounded = with_growth_lower_bound(scored, "recent", "baseline", periods.recent.hours, periods.baseline.hours,
                                      z=confidence)
    growing = bounded.filter(pl.col("growth_lower_bound") > 0)
    return (first_rows(growing, ["growth_lower_bound", req.dimension], [True, False], req.limit, req.offset)
            .select(pl.col(req.dimension).alias("value"), "recent", "baseline", "growth_pct"))


_ACTIVITY_ORDER = {"added": ADDS, "removed": REMOVES, "edited": EDITS, "all": "total_events"}


def keyword_activity(release: Release, as_of: dt.datetime, req: KeywordActivity, noise: bool = False) -> pl.DataFrame:
    table = TABLES_BY_NAME["keyword_changes"]
    cells = _cells(release, table, window_range(req.window, as_of), as_of)
    shown = cells.select(
        pl.col(CELL).alias("keyword"), *(whole(m).alias(m) for m in (ADDS, REMOVES, EDITS)), pl.col(USERS),
        *(_std(m).alias(m + STD) for m in (ADDS, REMOVES, EDITS)), pl.col(USERS + STD).alias("unique_users" + STD))
    derived = shown.with_columns((pl.col(ADDS) + pl.col(REMOVES) + pl.col(EDITS)).alias("total_events"),
                                 (pl.col(ADDS) - pl.col(REMOVES)).alias("net_adds"),
                                 (pl.col(ADDS + STD) ** 2 + pl.col(REMOVES + STD) ** 2 + pl.col(EDITS + STD) ** 2)
                                 .sqrt().alias("total_events" + STD),
                                 (pl.col(ADDS + STD) ** 2 + pl.col(REMOVES + STD) ** 2).sqrt().alias("net_adds" + STD))
    derived = derived.with_columns(whole(USERS).alias("unique_users"))
    order_by = _ACTIVITY_ORDER[req.type]
    if req.type != "all":
        derived = derived.filter(pl.col(order_by) > 0)
    fields = (ADDS, REMOVES, EDITS, "total_events", "unique_users", "net_adds")
    return (first_rows(derived, [order_by, "keyword"], [True, False], req.limit, req.offset)
            .select("keyword", *fields, *([f + STD for f in fields] if noise else [])))


# --- POST /query inside the menu ---------------------------------------------------------------

_GEO_NAME = {"country": "country_name", "region": "region_name", "county": "county_name", "city": "city_name"}


@dataclasses.dataclass(frozen=True)
class QueryShape:
    table: Table
    grouped: str | None      # the dimension grouped by (None: totals)
    values: tuple[str, ...] | None  # the filter's values on the table's dimension


def query_shape(req: FlexibleQuery) -> QueryShape:
    """The released table that answers `req`, or `OutsideMenu`."""
    dims = [d for d in req.group_by if d != "time"]
    filtered = {FILTER_COLUMNS[k]: v for k, v in req.filters.items()}
    covered = set(dims) | set(filtered)
    if len(covered) > 1:
        raise OutsideMenu(
            f"this query combines {', '.join(sorted(covered))}; the release covers one dimension at a time "
            f"(group_by and filters on the same one, with or without time): tables "
            f"{', '.join(t.name for t in SUPPRESSION_TABLES.values())}. See GET /api/v1/privacy.")
    if not covered:  # every event has a country, and a user-day is in one: no user counted twice
        return QueryShape(SUPPRESSION_TABLES["country"], None, None)
    (dimension,) = covered
    return QueryShape(SUPPRESSION_TABLES[dimension], dimension if dims else None, filtered.get(dimension))


def query(release: Release, as_of: dt.datetime, req: FlexibleQuery, noise: bool = False) -> pl.DataFrame:
    shape = query_shape(req)
    table = shape.table
    window = window_range(req.window, as_of)
    timed = "time" in req.group_by
    measures = table.measure_names
    view = release.view(table.name)
    if timed:
        assert req.bucket is not None
        starts = bucket_starts(window, req.bucket)
        step = bucket_step(req.bucket)
        ranges = [(max(s, window.start), min(s + step, window.end)) for s in starts]
        cells = list(shape.values) if shape.values is not None else list(domains.domain(table))
        if shape.grouped is None and shape.values is None:
            cells = list(domains.domain(table))
        parts = []
        for index, (first, last) in enumerate(ranges):
            frame = view.window(first, last, cells if shape.values is not None else None)
            factor = repeat_factor(release, table, USER_DAYS, window_days(first, last), as_of)
            parts.append(frame.with_columns(pl.lit(starts[index]).cast(pl.Datetime("us", "UTC")).alias("ts"),
                                            pl.lit(factor).alias("_factor")))
        frame = pl.concat(parts, how="vertical")
        keys = ["ts"] if shape.grouped is None else ["ts", CELL]
    else:
        frame = view.window(window.start, window.end)
        if shape.values is not None:
            frame = frame.filter(pl.col(CELL).is_in(list(shape.values)))
        factor = repeat_factor(release, table, USER_DAYS, window_days(window.start, window.end), as_of)
        frame = frame.with_columns(pl.lit(factor).alias("_factor"))
        keys = [] if shape.grouped is None else [CELL]
    agg = [pl.col(c).sum() for m in measures for c in (m, m + VAR)] + [pl.col("_factor").first()]
    grouped = frame.group_by(keys).agg(agg) if keys else frame.select(agg)
    visible = pl.col(USER_DAYS) >= show_z(table) * pl.col(USER_DAYS + VAR).sqrt()
    grouped = grouped.with_columns((pl.col(USER_DAYS) / pl.col("_factor")).alias(USERS),
                                   (_std(USER_DAYS) / pl.col("_factor")).alias("unique_users" + STD))
    if keys:
        grouped = grouped.filter(visible)
        published = grouped.with_columns(whole(SUPPRESSIONS).alias(SUPPRESSIONS), whole(EVENTS).alias(EVENTS))
    else:  # one row of totals, always: zeros when too few users are behind it
        published = grouped.with_columns(*(pl.when(visible).then(whole(m)).otherwise(0).alias(m)
                                           for m in (SUPPRESSIONS, EVENTS)),
                                         pl.when(visible).then(pl.col(USERS)).otherwise(0.0).alias(USERS))
    published = _consistent(published, USERS, "unique_users", EVENTS, SUPPRESSIONS).with_columns(
        _std(SUPPRESSIONS).alias(SUPPRESSIONS + STD), _std(EVENTS).alias(EVENTS + STD))
    out_dims = []
    for dimension in req.group_by:
        if dimension == "time":
            out_dims.append("ts")
        elif dimension in _GEO_NAME:
            published = published.with_columns(pl.col(CELL).alias(f"{dimension}_id"))
            published = published.with_columns(label_series(_GEO_NAME[dimension], dimension,
                                                            published.get_column(CELL)))
            out_dims.append(f"{dimension}_id")
        else:
            published = published.with_columns(pl.col(CELL).alias(dimension))
            out_dims.append(dimension)
    order_dims = list(out_dims)
    ordered = first_rows(published, [req.order_by, *order_dims], [req.order == "desc", *([False] * len(order_dims))],
                         req.limit, req.offset)
    columns = []
    for dimension in req.group_by:
        if dimension == "time":
            columns.append("ts")
        elif dimension in _GEO_NAME:
            columns += [f"{dimension}_id", _GEO_NAME[dimension]]
        else:
            columns.append(dimension)
    measures_out = [SUPPRESSIONS, "unique_users", EVENTS]
    return ordered.select(*columns, *measures_out, *([m + STD for m in measures_out] if noise else []))
