"""GET /top-keywords: keywords ranked by suppressions in the window."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.api.windows import window_range
from service.engine.polars.contributions import cell_contributions
from service.engine.polars.slicing import time_slice
from service.engine.polars.user_keys import known_bits
from service.engine.publication.top_keywords import publish_top_keywords
from service.engine.requests import TopKeywords
from service.privacy import Privacy
from service.store.reader import EventFrames


def top_keywords(frames: EventFrames, as_of: dt.datetime, req: TopKeywords, privacy: Privacy,
                 noise: bool = False) -> pl.DataFrame:
    """keyword_raw, suppressions, users_est, rank; rank 1..n over the published counts. With
    `noise`, also each count's noise standard deviation (`<count>_std`, engine/noise.py)."""
    window = window_range(req.window, as_of)
    cells, contributions = cell_contributions(time_slice(frames.suppressions, window), ["keyword"], privacy.params,
                                              user_bits=known_bits(frames))
    return publish_top_keywords(cells, contributions, window, frames.versions, req, privacy, noise)
