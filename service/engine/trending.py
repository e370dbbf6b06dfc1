"""GET /trending: the values of a dimension whose hourly rate grew most, recent vs baseline.

For each value: `recent` and `baseline` are the metric's totals in the two periods of
`windows.trending_periods`; growth compares their hourly rates (`windows.growth_pct`).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.engine.growth import with_growth_pct
from service.engine.measures import UNIQUE_USERS, as_strings, measure
from service.engine.ordering import first_rows
from service.engine.requests import Trending
from service.engine.slicing import time_slice
from service.privacy import CellContext, Privacy
from service.store import schema
from service.store.reader import EventFrames
from service.windows import TimeRange, floor_hour, trending_periods, window_range

RECENT = "recent"
BASELINE = "baseline"


def _whole_hours(period: TimeRange) -> bool:
    return all(moment == floor_hour(moment) for moment in (period.start, period.end))


def _period_totals(frames: EventFrames, period: TimeRange, dimension: str, metric: str, name: str) -> pl.DataFrame:
    """The metric's total per value of `dimension` over one period, in column `name`."""
    hourly = frames.hourly.get(dimension)
    if metric != UNIQUE_USERS and hourly is not None and _whole_hours(period):
        # Sums and counts add up over the hourly rollup; periods of whole hours cover whole rows.
        rows, total = time_slice(hourly, period), pl.col(metric).sum()
    else:
        # Each period is its own slice (the table is sorted by time), so distinct users are
        # counted per period without a per-row condition.
        rows, total = time_slice(frames.suppressions, period), measure(metric)
    return rows.group_by(dimension).agg(total.alias(name)).drop_nulls(dimension)


def trending(frames: EventFrames, as_of: dt.datetime, req: Trending, privacy: Privacy) -> pl.DataFrame:
    """value, recent, baseline, growth_pct; growth_pct desc, ties by value."""
    dimension = req.dimension
    periods = trending_periods(req.window, as_of)
    recent = _period_totals(frames, periods.recent, dimension, req.metric, RECENT)
    baseline = _period_totals(frames, periods.baseline, dimension, req.metric, BASELINE)
    cells = (
        baseline.join(recent, on=dimension, how="full", coalesce=True)
        .with_columns(pl.col(RECENT).fill_null(0), pl.col(BASELINE).fill_null(0))
        .select(dimension, RECENT, BASELINE)
    )
    published = privacy.publish(
        as_strings(cells, [dimension]),
        CellContext(
            table=schema.SUPPRESSIONS,
            dims=(dimension,),
            measures=(RECENT, BASELINE),
            time_range=window_range(req.window, as_of),
            as_of=as_of,
        ),
    )
    # Filters and growth use the published numbers, so every row satisfies them as shown.
    kept = published.filter(
        (pl.col(BASELINE) > 0) & (pl.col(BASELINE).cast(pl.Float64) >= float(req.min_baseline))
    )
    scored = with_growth_pct(kept, RECENT, BASELINE, periods.recent.hours, periods.baseline.hours)
    return (
        first_rows(scored, ["growth_pct", dimension], [True, False], req.limit)
        .select(pl.col(dimension).alias("value"), RECENT, BASELINE, "growth_pct")
    )
