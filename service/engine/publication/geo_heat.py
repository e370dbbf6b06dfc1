"""GET /geo-heat's publication stage: per-unit cells -> the records, most suppressions first.

Shared by both engines: the polars engine (engine/polars/) and the ClickHouse engine
(engine/clickhouse/) compute the cells their own way and publish them here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.api.windows import TimeRange
from service.engine.geo_labels import label_series
from service.engine.measures import EVENTS, SUPPRESSIONS, UNIQUE_USERS, as_strings, published
from service.engine.noise_std import std_columns
from service.engine.publication.reconcile import users_within_counts
from service.privacy import CellContext, Contributions, Privacy
from service.store import schema

KEYWORD_COUNT = "keyword_count"


def publish_geo_heat(cells: pl.DataFrame, contributions: Contributions, level: str, window: TimeRange,
                     versions: Mapping[str, Mapping[dt.date, int]], privacy: Privacy, noise: bool = False) -> pl.DataFrame:
    """The publication stage of any engine: per-unit cells (`cell_contributions`' shape plus
    keyword_count) -> the endpoint's frame."""
    shown = privacy.publish(
        as_strings(cells, [level]),
        CellContext(
            table=schema.SUPPRESSIONS,
            dims=(level,),
            # events only to bound the user count (reconcile.py): the number /query publishes for
            # this cell, not shown here.
            published=published(SUPPRESSIONS, UNIQUE_USERS, KEYWORD_COUNT, EVENTS),
            time_range=window,
            versions=versions.get(schema.SUPPRESSIONS, {}),
        ),
        contributions,
        noise_std=noise,
    )
    shown = users_within_counts(shown, UNIQUE_USERS, [SUPPRESSIONS, EVENTS])
    ordered = shown.sort([SUPPRESSIONS, level], descending=[True, False])
    return ordered.select(
        pl.col(level).alias("geo_key"),
        label_series("label", level, ordered.get_column(level)),
        SUPPRESSIONS,
        UNIQUE_USERS,
        KEYWORD_COUNT,
        *std_columns(noise, {SUPPRESSIONS: SUPPRESSIONS, UNIQUE_USERS: UNIQUE_USERS, KEYWORD_COUNT: KEYWORD_COUNT},
                      shown.columns),
    )
