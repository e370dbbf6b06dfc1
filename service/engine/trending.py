"""GET /trending: the values of a dimension whose hourly rate grew most, recent vs baseline.

For each value: `recent` and `baseline` are the metric's totals in the two periods of
`windows.trending_periods`; growth compares their hourly rates (`windows.growth_pct`).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.engine.growth import with_growth_pct
from service.engine.measures import UNIQUE_USERS, as_strings, capped_cells
from service.engine.ordering import first_rows
from service.engine.requests import Trending
from service.engine.slicing import time_slice
from service.privacy import CellContext, Privacy, Published
from service.store import schema
from service.store.reader import EventFrames
from service.windows import TimeRange, trending_periods, window_range

RECENT = "recent"
BASELINE = "baseline"


def _period_cells(frames: EventFrames, period: TimeRange, dimension: str, metric: str, name: str,
                  privacy: Privacy) -> pl.DataFrame:
    """Per value of `dimension` over one period: the metric's (capped) total in column `name`,
    and the period's distinct users in `<name>_users`, which decides whether it is published."""
    cells = capped_cells(time_slice(frames.suppressions, period), [dimension], privacy.params)
    return cells.drop_nulls(dimension).select(
        dimension, pl.col(metric).alias(name), pl.col(UNIQUE_USERS).alias(f"{name}_users")
    )


def trending(frames: EventFrames, as_of: dt.datetime, req: Trending, privacy: Privacy) -> pl.DataFrame:
    """value, recent, baseline, growth_pct; growth_pct desc, ties by value."""
    dimension = req.dimension
    periods = trending_periods(req.window, as_of)
    recent = _period_cells(frames, periods.recent, dimension, req.metric, RECENT, privacy)
    baseline = _period_cells(frames, periods.baseline, dimension, req.metric, BASELINE, privacy)
    counts = [RECENT, BASELINE, f"{RECENT}_users", f"{BASELINE}_users"]
    cells = baseline.join(recent, on=dimension, how="full", coalesce=True).with_columns(
        pl.col(c).fill_null(0) for c in counts
    )
    # Recent and baseline are two cells of their own (their periods): each gets its own noise,
    # and a value is shown only when both are published.
    shown = privacy.publish(
        as_strings(cells, [dimension]),
        CellContext(
            table=schema.SUPPRESSIONS,
            dims=(dimension,),
            published=(
                Published(RECENT, req.metric, f"{RECENT}_users", period=periods.recent),
                Published(BASELINE, req.metric, f"{BASELINE}_users", period=periods.baseline),
            ),
            time_range=window_range(req.window, as_of),
            versions=frames.versions.get(schema.SUPPRESSIONS, {}),
        ),
    )
    # Filters and growth use the published numbers, so every row satisfies them as shown.
    kept = shown.filter(
        (pl.col(BASELINE) > 0) & (pl.col(BASELINE).cast(pl.Float64) >= float(req.min_baseline))
    )
    scored = with_growth_pct(kept, RECENT, BASELINE, periods.recent.hours, periods.baseline.hours)
    return (
        first_rows(scored, ["growth_pct", dimension], [True, False], req.limit)
        .select(pl.col(dimension).alias("value"), RECENT, BASELINE, "growth_pct")
    )
