"""GET /trending: the values of a dimension whose hourly rate grew most, recent vs baseline.

For each value: `recent` and `baseline` are the metric's totals in the two periods of
`windows.trending_periods`; growth compares their hourly rates (`growth.with_growth_pct`).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.api.windows import TimeRange, trending_periods
from service.engine.growth import CONFIDENCE_Z
from service.engine.measures import UNIQUE_USERS
from service.engine.polars.cell_keys import Packing
from service.engine.polars.contributions import cell_contributions
from service.engine.polars.slicing import time_slice
from service.engine.polars.user_keys import known_bits
from service.engine.publication.trending import BASELINE, RECENT, publish_trending
from service.engine.requests import Trending
from service.privacy import PILOT, Contributions, Privacy
from service.store.reader import EventFrames


def _period_cells(frames: EventFrames, period: TimeRange, dimension: str, metric: str, name: str,
                  privacy: Privacy) -> tuple[pl.DataFrame, Contributions | None]:
    """Per value of `dimension` over one period: the period's distinct users (`<name>_users`, which
    decide whether it is published) and the metric (`name`: the count itself for unique_users, the
    pilot sum `<name>_pilot` for a summed metric); and, for a summed metric, the users' totals
    behind it, under the column `name`."""
    rows = time_slice(frames.suppressions, period)
    bits = known_bits(frames)
    if metric == UNIQUE_USERS:  # no sums: distinct users per value is all it takes
        packing = Packing.of(rows.schema, [dimension], bits)
        if packing is None:
            users = rows.lazy().group_by(dimension).agg(pl.col("user_id").n_unique().cast(pl.Int64).alias(name))
        else:  # the distinct (value, user) keys, counted per value (engine/polars/cell_keys.py)
            users = (rows.lazy().group_by(packing.key).agg().select(*packing.unpacked)
                     .group_by(dimension).agg(pl.len().cast(pl.Int64).alias(name)))
        return users.drop_nulls(dimension).with_columns(pl.col(name).alias(f"{name}_users")).collect(), None
    cells, contributions = cell_contributions(rows, [dimension], privacy.params, user_bits=bits)
    users_column = pl.col(UNIQUE_USERS).alias(f"{name}_users")
    assert contributions.totals is not None
    return (
        cells.drop_nulls(dimension).select(dimension, pl.col(f"{metric}{PILOT}").alias(f"{name}{PILOT}"), users_column),
        Contributions(contributions.per_user.select(dimension, pl.col(metric).alias(name)), (dimension,),
                      contributions.totals.select(dimension, pl.col(metric).alias(name))),
    )


def both_periods(recent: Contributions | None, baseline: Contributions | None) -> Contributions | None:
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
    return publish_trending(recent, baseline, both_periods(recent_contributions, baseline_contributions),
                            frames.versions, as_of, req, privacy, confidence)
