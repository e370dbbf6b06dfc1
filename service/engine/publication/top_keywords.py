"""GET /top-keywords' publication stage: per-keyword cells -> the ranked records.

Shared by both engines: the polars engine (engine/polars/) and the ClickHouse engine
(engine/clickhouse/) compute the cells their own way and publish them here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.api.windows import TimeRange
from service.engine.measures import EVENTS, SUPPRESSIONS, UNIQUE_USERS, as_strings, published
from service.engine.noise_std import std_columns
from service.engine.ordering import first_rows
from service.engine.publication.reconcile import users_within_counts
from service.engine.requests import TopKeywords
from service.privacy import CellContext, Contributions, Privacy
from service.store import schema


def publish_top_keywords(cells: pl.DataFrame, contributions: Contributions, window: TimeRange,
                         versions: Mapping[str, Mapping[dt.date, int]], req: TopKeywords,
                         privacy: Privacy, noise: bool = False) -> pl.DataFrame:
    """The publication stage of any engine: per-keyword cells (`cell_contributions`' shape) ->
    the endpoint's frame."""
    shown = privacy.publish(
        as_strings(cells.drop_nulls("keyword"), ["keyword"]),
        CellContext(
            table=schema.SUPPRESSIONS,
            dims=("keyword",),
            # events only to bound the user count (reconcile.py): the number /query publishes for
            # this cell, not shown here.
            published=published(SUPPRESSIONS, UNIQUE_USERS, EVENTS),
            time_range=window,
            versions=versions.get(schema.SUPPRESSIONS, {}),
        ),
        contributions,
        noise_std=noise,
    )
    shown = users_within_counts(shown, UNIQUE_USERS, [SUPPRESSIONS, EVENTS])
    # Ranked after publishing: a rank must agree with the numbers shown next to it.
    return (
        first_rows(shown, [SUPPRESSIONS, "keyword"], [True, False], req.limit, req.offset)
        .with_row_index("rank", offset=req.offset + 1)
        .select(
            pl.col("keyword").alias("keyword_raw"),
            SUPPRESSIONS,
            pl.col(UNIQUE_USERS).alias("users_est"),
            pl.col("rank").cast(pl.Int64),
            *std_columns(noise, {SUPPRESSIONS: SUPPRESSIONS, UNIQUE_USERS: "users_est"}, shown.columns),
        )
    )
