"""GET /keyword-activity: how often keywords were added to, removed from, or edited in filter lists."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.api.windows import window_range
from service.engine.measures import TOTAL, UNIQUE_USERS
from service.engine.polars.slicing import time_slice
from service.engine.publication.keyword_activity import ACTION_COUNTS, publish_keyword_activity
from service.engine.requests import KeywordActivity
from service.privacy import PILOT, Contributions, Privacy, reachable_rows
from service.store.reader import EventFrames


def keyword_activity(frames: EventFrames, as_of: dt.datetime, req: KeywordActivity, privacy: Privacy,
                     noise: bool = False) -> pl.DataFrame:
    """keyword, adds, removes, edits, total_events, unique_users, net_adds (with `noise`, also each
    count's noise standard deviation, `<count>_std`; the derived counts' from their parts')."""
    window = window_range(req.window, as_of)
    pilot = privacy.params.pilot_cap
    # Each user's count of each action per keyword: the contributions behind the action counts,
    # each capped per cell by the privacy stage.
    per_user = (
        time_slice(frames.keyword_changes, window)
        .lazy()
        .group_by("keyword", "user_id")
        .agg((pl.col("action") == action).sum().cast(pl.Int64).alias(name) for name, action in ACTION_COUNTS.items())
        .drop("user_id")
        .collect()
    )
    cells = (
        per_user.group_by("keyword")
        .agg(
            *(pl.col(name).clip(upper_bound=pilot).sum().alias(f"{name}{PILOT}") for name in ACTION_COUNTS),
            # Users behind each count: an action's count is its own cell ({keyword, action}).
            *((pl.col(name) > 0).sum().cast(pl.Int64).alias(f"{name}_users") for name in ACTION_COUNTS),
            pl.len().cast(pl.Int64).alias(UNIQUE_USERS),
            *(pl.col(name).sum().alias(f"{name}{TOTAL}") for name in ACTION_COUNTS),
        )
        .drop_nulls("keyword")
    )
    # As in contributions.cell_contributions: each count's exact total, and only the users a cap can
    # reach (the others lose nothing to any cap).
    exact = cells.select("keyword", *(pl.col(f"{name}{TOTAL}").alias(name) for name in ACTION_COUNTS))
    reachable = reachable_rows(per_user, list(ACTION_COUNTS), privacy.params)
    return publish_keyword_activity(cells.drop(f"{name}{TOTAL}" for name in ACTION_COUNTS),
                                    Contributions(reachable, ("keyword",), exact), window, frames.versions, req,
                                    privacy, noise)
