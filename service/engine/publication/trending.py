"""GET /trending's publication stage: both periods' cells -> growth, the records.

Shared by both engines: the polars engine (engine/polars/) and the ClickHouse engine
(engine/clickhouse/) compute the cells their own way and publish them here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.api.windows import trending_periods, window_range
from service.engine.growth import CONFIDENCE_Z, with_growth_lower_bound, with_growth_pct
from service.engine.measures import as_strings
from service.engine.ordering import first_rows
from service.engine.requests import Trending
from service.privacy import CellContext, Contributions, Privacy, Published
from service.store import schema

RECENT = "recent"

BASELINE = "baseline"


def publish_trending(recent: pl.DataFrame, baseline: pl.DataFrame, contributions: Contributions | None,
                     versions: Mapping[str, Mapping[dt.date, int]], as_of: dt.datetime, req: Trending,
                     privacy: Privacy, confidence: float = CONFIDENCE_Z) -> pl.DataFrame:
    """The publication stage of any engine: each period's cells (`_period_cells`' shape) and the
    contributions of both (`both_periods`) -> the endpoint's frame."""
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
        first_rows(growing, ["growth_lower_bound", dimension], [True, False], req.limit, req.offset)
        .select(pl.col(dimension).alias("value"), RECENT, BASELINE, "growth_pct")
    )
