"""GET /geo-heat: activity per geographic unit at one level (country, region, county, city)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.api.windows import window_range
from service.engine.polars.contributions import cell_contributions, key_guards
from service.engine.polars.slicing import time_slice
from service.engine.polars.user_keys import known_bits
from service.engine.publication.geo_heat import KEYWORD_COUNT, publish_geo_heat
from service.engine.requests import GeoHeat
from service.privacy import Privacy
from service.store.reader import EventFrames


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
    cells, contributions = cell_contributions(kept, [level], privacy.params, [first_rows], [keyword_count],
                                              user_bits=known_bits(frames))
    return publish_geo_heat(cells, contributions, level, window, frames.versions, privacy, noise)
