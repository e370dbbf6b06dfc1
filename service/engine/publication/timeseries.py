"""The time series' publication stage (keyword and domain): per-bucket cells -> one record per bucket.

Shared by both engines: the polars engine (engine/polars/) and the ClickHouse engine
(engine/clickhouse/) compute the cells their own way and publish them here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.api.windows import TimeRange, bucket_starts
from service.engine.measures import (
    CELL_MEASURES,
    EVENTS,
    SUPPRESSIONS,
    UNIQUE_USERS,
    pilot_columns,
    published,
    zero_filled,
)
from service.engine.noise_std import std_columns
from service.engine.publication.reconcile import users_within_counts
from service.privacy import CellContext, Contributions, Privacy
from service.store import schema


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
    shown = users_within_counts(shown, UNIQUE_USERS, [SUPPRESSIONS, EVENTS])
    series = buckets.join(shown.drop(column), on="ts", how="left", maintain_order="left")
    return zero_filled(series, CELL_MEASURES).select(
        "ts", SUPPRESSIONS, pl.col(UNIQUE_USERS).alias("users_est"), EVENTS,
        *std_columns(noise, {SUPPRESSIONS: SUPPRESSIONS, UNIQUE_USERS: "users_est", EVENTS: EVENTS}, shown.columns),
    )
