"""GET /geo-heat: activity per geographic unit at one level (country, region, county, city)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.engine.geo_labels import label_series
from service.engine.measures import SUPPRESSIONS, UNIQUE_USERS, as_strings, cell_contributions, key_guards, published
from service.engine.noise_std import std_columns
from service.engine.polars.slicing import time_slice
from service.engine.requests import GeoHeat
from service.privacy import CellContext, Contributions, Privacy
from service.store import schema
from service.store.reader import EventFrames
from service.windows import TimeRange, window_range

KEYWORD_COUNT = "keyword_count"


def geo_heat(frames: EventFrames, as_of: dt.datetime, req: GeoHeat, privacy: Privacy, noise: bool = False) -> pl.DataFrame:
    """geo_key, label, suppressions, unique_users, keyword_count; rows without that level left out
    (with `noise`, also each count's noise standard deviation, `<count>_std`)."""
    level = req.level
    window = window_range(req.window, as_of)
    rows = time_slice(frames.suppressions, window)
    guards = key_guards(rows, [level])
    kept = (rows.filter(guards) if guards else rows).lazy()
    # Distinct keywords, each user bringing at most keyword_rows_per_user of their rows (their
    # first: polars keeps a group's rows in order): one person can move the count by at most that
    # much, which is what its noise is calibrated to. Taken in the same per-user pass as the sums.
    first_rows = pl.col("keyword").head(privacy.params.keyword_rows_per_user).alias("_keywords")
    keyword_count = pl.col("_keywords").explode().n_unique().cast(pl.Int64).alias(KEYWORD_COUNT)
    cells, contributions = cell_contributions(kept, [level], privacy.params, [first_rows], [keyword_count])
    return publish_geo_heat(cells, contributions, level, window, frames.versions, privacy, noise)


def publish_geo_heat(cells: pl.DataFrame, contributions: Contributions, level: str, window: TimeRange,
                     versions: Mapping[str, Mapping[dt.date, int]], privacy: Privacy, noise: bool = False) -> pl.DataFrame:
    """The publication stage of any engine: per-unit cells (`cell_contributions`' shape plus
    keyword_count) -> the endpoint's frame."""
    shown = privacy.publish(
        as_strings(cells, [level]),
        CellContext(
            table=schema.SUPPRESSIONS,
            dims=(level,),
            published=published(SUPPRESSIONS, UNIQUE_USERS, KEYWORD_COUNT),
            time_range=window,
            versions=versions.get(schema.SUPPRESSIONS, {}),
        ),
        contributions,
        noise_std=noise,
    )
    ordered = shown.sort([SUPPRESSIONS, level], descending=[True, False])
    return ordered.select(
        pl.col(level).alias("geo_key"),
        label_series("label", level, ordered.get_column(level)),
        SUPPRESSIONS,
        UNIQUE_USERS,
        KEYWORD_COUNT,
        *std_columns(noise, {SUPPRESSIONS: SUPPRESSIONS, UNIQUE_USERS: UNIQUE_USERS, KEYWORD_COUNT: KEYWORD_COUNT}),
    )
