"""GET /keyword-activity: how often keywords were added to, removed from, or edited in filter lists."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.engine.measures import UNIQUE_USERS, as_strings, measure
from service.engine.ordering import first_rows
from service.engine.requests import KeywordActivity
from service.engine.slicing import time_slice
from service.privacy import CellContext, Privacy
from service.store import schema
from service.store.reader import EventFrames
from service.windows import window_range

ADDS, REMOVES, EDITS = "adds", "removes", "edits"
_ACTION_COUNTS = {ADDS: "add", REMOVES: "remove", EDITS: "edit"}

# type -> the count that selects and orders keywords (only keywords where it is > 0);
# `all` keeps every keyword and orders by total_events.
_ORDER_BY = {"added": ADDS, "removed": REMOVES, "edited": EDITS, "all": "total_events"}


def keyword_activity(frames: EventFrames, as_of: dt.datetime, req: KeywordActivity, privacy: Privacy) -> pl.DataFrame:
    """keyword, adds, removes, edits, total_events, unique_users, net_adds."""
    window = window_range(req.window, as_of)
    cells = (
        time_slice(frames.keyword_changes, window)
        .group_by("keyword")
        .agg(
            *((pl.col("action") == action).sum().cast(pl.Int64).alias(name) for name, action in _ACTION_COUNTS.items()),
            measure(UNIQUE_USERS),
        )
        .drop_nulls("keyword")
    )
    published = privacy.publish(
        as_strings(cells, ["keyword"]),
        CellContext(
            table=schema.KEYWORD_CHANGES,
            dims=("keyword",),
            measures=(ADDS, REMOVES, EDITS, UNIQUE_USERS),
            time_range=window,
            as_of=as_of,
        ),
    )
    # Derived from the published counts, so total = adds + removes + edits and
    # net = adds - removes hold exactly in every answer.
    derived = published.with_columns(
        (pl.col(ADDS) + pl.col(REMOVES) + pl.col(EDITS)).alias("total_events"),
        (pl.col(ADDS) - pl.col(REMOVES)).alias("net_adds"),
    )
    order_by = _ORDER_BY[req.type]
    if req.type != "all":
        derived = derived.filter(pl.col(order_by) > 0)
    return (
        first_rows(derived, [order_by, "keyword"], [True, False], req.limit)
        .select("keyword", ADDS, REMOVES, EDITS, "total_events", UNIQUE_USERS, "net_adds")
    )
