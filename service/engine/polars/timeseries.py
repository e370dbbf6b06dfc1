"""GET /keyword-timeseries and /domain-timeseries: one value's activity per time bucket.

Every bucket that overlaps the window is listed, oldest first, with zeros where nothing
happened; the first and last bucket may stick out of the window, but only events inside the
window are counted in them.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.api.windows import window_range
from service.engine.polars.contributions import bucket_key, cell_contributions
from service.engine.polars.slicing import time_slice
from service.engine.publication.timeseries import publish_timeseries
from service.engine.requests import DomainTimeseries, KeywordTimeseries
from service.privacy import Privacy
from service.store.reader import EventFrames


def keyword_timeseries(frames: EventFrames, as_of: dt.datetime, req: KeywordTimeseries, privacy: Privacy,
                       noise: bool = False) -> pl.DataFrame:
    return value_timeseries(frames, as_of, "keyword", req.keyword, req.window, req.bucket, privacy, noise)


def domain_timeseries(frames: EventFrames, as_of: dt.datetime, req: DomainTimeseries, privacy: Privacy,
                      noise: bool = False) -> pl.DataFrame:
    return value_timeseries(frames, as_of, "domain", req.domain, req.window, req.bucket, privacy, noise)


def value_timeseries(
    frames: EventFrames,
    as_of: dt.datetime,
    column: str,
    value: str,
    window_name: str,
    bucket: str,
    privacy: Privacy,
    noise: bool = False,
) -> pl.DataFrame:
    """ts, suppressions, users_est, events of the rows where `column == value`, zero-filled (with
    `noise`, also each count's noise standard deviation, `<count>_std`)."""
    window = window_range(window_name, as_of)
    rows = time_slice(frames.suppressions, window).lazy().filter(pl.col(column) == value)
    counts, contributions = cell_contributions(rows, [bucket_key(bucket)], privacy.params)
    return publish_timeseries(counts, contributions, column, value, window, bucket, frames.versions, privacy, noise)
