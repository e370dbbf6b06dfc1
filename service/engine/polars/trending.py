"""GET /trending: the values of a dimension whose hourly rate grew most, recent vs baseline.

For each value: `recent` and `baseline` are the metric's totals in the two periods of
`windows.trending_periods`; growth compares their hourly rates (`growth.with_growth_pct`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.engine.growth import CONFIDENCE_Z, with_growth_lower_bound, with_growth_pct
from service.engine.measures import UNIQUE_USERS, as_strings, cell_contributions
from service.engine.ordering import first_rows
from service.engine.polars.slicing import time_slice
from service.engine.requests import Trending
from service.privacy import PILOT, CellContext, Contributions, Privacy, Published
from service.store import schema
from service.store.reader import EventFrames
from service.windows import TimeRange, trending_periods, window_range

RECENT = "recent"
BASELINE = "baseline"


def _period_cells(frames: EventFrames, period: TimeRange, dimension: str, metric: str, name: str,
                  privacy: Privacy) -> tuple[pl.DataFrame, Contributions | None]:
    """Per value of `dimension` over one period: the period's distinct users (`<name>_users`, which
    decide whether it is published) and the metric (`name`: the count itself for unique_users, the
    pilot sum `<name>_pilot` for a summed metric); and, for a summed metric, the users' totals
    behind it, under the column `name`."""
    rows = time_slice(frames.suppressions, period)
    if metric == UNIQUE_USERS:  # no sums: distinct users per value is all it takes
        users = rows.lazy().group_by(dimension).agg(pl.col("user_id").n_unique().cast(pl.Int64).alias(name))
        return users.drop_nulls(dimension).with_columns(pl.col(name).alias(f"{name}_users")).collect(), None
    cells, contributions = cell_contributions(rows, [dimension], privacy.params)
    users = pl.col(UNIQUE_USERS).alias(f"{name}_users")
    assert contributions.totals is not None
    return (
        cells.drop_nulls(dimension).select(dimension, pl.col(f"{metric}{PILOT}").alias(f"{name}{PILOT}"), users),
        Contributions(contributions.per_user.select(dimension, pl.col(metric).alias(name)), (dimension,),
                      contributions.totals.select(dimension, pl.col(metric).alias(name))),
    )


def _both_periods(recent: Contributions | None, baseline: Contributions | None) -> Contributions | None:
    """One set of contributions for the two periods' columns: a user's row of one period is 0 in
    the other's column."""
    if recent is None or baseline is None:
        return None
    dimension = recent.keys[0]
    assert recent.totals is not None and baseline.totals is not None
    return Contributions(
        pl.concat([recent.per_user, baseline.per_user], how="diagonal").fill_null(0),
        (dimension,),
        recent.totals.join(baseline.totals, on=dimension, how="full", coalesce=True).fill_null(0),
    )


def trending(frames: EventFrames, as_of: dt.datetime, req: Trending, privacy: Privacy,
             confidence: float = CONFIDENCE_Z) -> pl.DataFrame:
    """value, recent, baseline, growth_pct; ordered by growth the noise cannot explain, then value."""
    dimension = req.dimension
    periods = trending_periods(req.window, as_of)
    recent, recent_contributions = _period_cells(frames, periods.recent, dimension, req.metric, RECENT, privacy)
    baseline, baseline_contributions = _period_cells(frames, periods.baseline, dimension, req.metric, BASELINE, privacy)
    return publish_trending(recent, baseline, _both_periods(recent_contributions, baseline_contributions),
                            frames.versions, as_of, req, privacy, confidence)


def publish_trending(recent: pl.DataFrame, baseline: pl.DataFrame, contributions: Contributions | None,
                     versions: Mapping[str, Mapping[dt.date, int]], as_of: dt.datetime, req: Trending,
                     privacy: Privacy, confidence: float = CONFIDENCE_Z) -> pl.DataFrame:
    """The publication stage of any engine: each period's cells (`_period_cells`' shape) and the
    contributions of both (`_both_periods`) -> the endpoint's frame."""
    dimension = req.dimension
    periods = trending_periods(req.window, as_of)
    cells = baseline.join(recent, on=dimension, how="full", coalesce=True)
    cells = cells.with_columns(pl.col(c).fill_null(0) for c in cells.columns if c != dimension)
    # Recent and baseline are two cells of their own (their periods): each gets its own noise and
    # cap, and a value is shown only when both are published.
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
            versions=versions.get(schema.SUPPRESSIONS, {}),
        ),
        contributions,
        noise_std=True,
    )
    # Filters and growth use the published numbers, so every row satisfies them as shown; the order
    # and the cut use the growth that the noise cannot explain, so noise does not rank first.
    kept = shown.filter(
        (pl.col(BASELINE) > 0) & (pl.col(BASELINE).cast(pl.Float64) >= float(req.min_baseline))
    )
    scored = with_growth_pct(kept, RECENT, BASELINE, periods.recent.hours, periods.baseline.hours)
    bounded = with_growth_lower_bound(scored, RECENT, BASELINE, periods.recent.hours, periods.baseline.hours,
                                      z=confidence)
    growing = bounded.filter(pl.col("growth_lower_bound") > 0)
    return (
        first_rows(growing, ["growth_lower_bound", dimension], [True, False], req.limit)
        .select(pl.col(dimension).alias("value"), RECENT, BASELINE, "growth_pct")
    )
