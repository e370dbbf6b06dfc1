"""The privacy stage without the engine: a frame of true totals per cell published as the engine
would hand it over (pilot sums and per-user rows), and the cell context of a week of keywords."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.api.windows import TimeRange
from service.privacy import PILOT, CellContext, Contributions, Privacy, Published

AS_OF = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
WEEK = TimeRange(AS_OF - dt.timedelta(days=7), AS_OF)
CELL = (Published("suppressions", "suppressions", "unique_users"), Published("events", "events", "unique_users"),
        Published("unique_users", "unique_users", "unique_users"))



def publish(privacy: Privacy, frame: pl.DataFrame, cell: CellContext, **options) -> pl.DataFrame:
    """`frame` holds true totals per cell; its users contribute equally (totals divisible by the
    user count). The stage gets what the engine gives it: pilot sums and the per-user rows."""
    keys = [dim for dim in cell.dims if dim in frame.columns]
    share = [(pl.col(m) // pl.col("unique_users").clip(lower_bound=1)).alias(m) for m in ("suppressions", "events")]
    per_user = (
        frame.select(*keys, "suppressions", "events", "unique_users").with_columns(share)
        .with_columns(pl.int_ranges(pl.col("unique_users")).alias("user")).explode("user")
        .filter(pl.col("user").is_not_null()).drop("user", "unique_users")
    )
    pilot = privacy.params.pilot_cap
    pilots = frame.with_columns(
        (pl.min_horizontal(pl.col(m) // pl.col("unique_users").clip(lower_bound=1), pl.lit(pilot))
         * pl.col("unique_users")).alias(f"{m}{PILOT}") for m in ("suppressions", "events")
    ).drop("suppressions", "events")
    return privacy.publish(pilots, cell, Contributions(per_user, tuple(keys)), **options)


def context(**overrides) -> CellContext:
    return CellContext(**{"table": "suppressions", "dims": ("keyword",), "published": CELL, "time_range": WEEK,
                          **overrides})
