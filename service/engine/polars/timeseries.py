"""GET /keyword-timeseries and /domain-timeseries: one value's activity per time bucket.

Every bucket that overlaps the window is listed, oldest first, with zeros where nothing
happened; the first and last bucket may stick out of the window, but only events inside the
window are counted in them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.engine.measures import (
    CELL_MEASURES,
    EVENTS,
    SUPPRESSIONS,
    UNIQUE_USERS,
    bucket_key,
    cell_contributions,
    pilot_columns,
    published,
    zero_filled,
)
from service.engine.noise_std import std_columns
from service.engine.polars.slicing import time_slice
from service.engine.requests import DomainTimeseries, KeywordTimeseries
from service.privacy import CellContext, Contributions, Privacy
from service.store import schema
from service.store.reader import EventFrames
from service.windows import TimeRange, bucket_starts, window_range


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


def publish_timeseries(counts: pl.DataFrame, contributions: Contributions, column: str, value: str,
                       window: TimeRange, bucket: str, versions: Mapping[str, Mapping[dt.date, int]],
                       privacy: Privacy, noise: bool = False) -> pl.DataFrame:
    """The publication stage of any engine: per-bucket cells (`ts`, `cell_contributions`' shape)
    -> the endpoint's frame, every bucket listed."""
    buckets = pl.DataFrame({"ts": pl.Series(bucket_starts(window, bucket), dtype=schema.TS)})
    # Every bucket is a cell, empty or not: the privacy stage decides what an empty one shows.
    inputs = [UNIQUE_USERS, *pilot_columns(SUPPRESSIONS, EVENTS)]
    cells = zero_filled(buckets.join(counts, on="ts", how="left", maintain_order="left"), inputs)
    shown = privacy.publish(
        cells.select(pl.lit(value, dtype=pl.String).alias(column), "ts", *inputs),
        CellContext(
            table=schema.SUPPRESSIONS,
            dims=(column, "ts"),
            published=published(*CELL_MEASURES, when_suppressed="zero"),
            time_range=window,
            versions=versions.get(schema.SUPPRESSIONS, {}),
            bucket=bucket,
        ),
        contributions,
        noise_std=noise,
    )
    # Joined back onto the bucket list, so the answer always lists every bucket.
    series = buckets.join(shown.drop(column), on="ts", how="left", maintain_order="left")
    return zero_filled(series, CELL_MEASURES).select(
        "ts", SUPPRESSIONS, pl.col(UNIQUE_USERS).alias("users_est"), EVENTS,
        *std_columns(noise, {SUPPRESSIONS: SUPPRESSIONS, UNIQUE_USERS: "users_est", EVENTS: EVENTS}),
    )
