"""GET /keyword-activity's publication stage: per-keyword action counts -> the records.

Shared by both engines: the polars engine (engine/polars/) and the ClickHouse engine
(engine/clickhouse/) compute the cells their own way and publish them here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.api.windows import TimeRange
from service.engine.measures import EVENTS, UNIQUE_USERS, as_strings
from service.engine.noise_std import std_columns
from service.engine.ordering import first_rows
from service.engine.publication.reconcile import users_within_counts
from service.engine.requests import KeywordActivity
from service.privacy import CellContext, Contributions, Privacy, Published
from service.store import schema

ADDS, REMOVES, EDITS = "adds", "removes", "edits"
ACTION_COUNTS = {ADDS: "add", REMOVES: "remove", EDITS: "edit"}  # count -> the action it counts (both engines)

# type -> the count that selects and orders keywords (only keywords where it is > 0);
# `all` keeps every keyword and orders by total_events.
_ORDER_BY = {"added": ADDS, "removed": REMOVES, "edited": EDITS, "all": "total_events"}


def publish_keyword_activity(cells: pl.DataFrame, contributions: Contributions, window: TimeRange,
                             versions: Mapping[str, Mapping[dt.date, int]], req: KeywordActivity,
                             privacy: Privacy, noise: bool = False) -> pl.DataFrame:
    """The publication stage of any engine: per-keyword cells (action counts' pilot sums and users,
    unique_users) -> the endpoint's frame."""
    shown = privacy.publish(
        as_strings(cells, ["keyword"]),
        CellContext(
            table=schema.KEYWORD_CHANGES,
            dims=("keyword",),
            published=(
                Published(UNIQUE_USERS, UNIQUE_USERS, UNIQUE_USERS),
                # A count with too few users behind it shows 0; the keyword row needs its own users.
                *(Published(name, EVENTS, f"{name}_users", extra=(("action", action),), when_suppressed="zero")
                  for name, action in ACTION_COUNTS.items()),
            ),
            time_range=window,
            versions=versions.get(schema.KEYWORD_CHANGES, {}),
        ),
        contributions,
        noise_std=noise,
    )
    # Derived from the published counts, so total = adds + removes + edits and
    # net = adds - removes hold exactly in every answer.
    derived = shown.with_columns(
        (pl.col(ADDS) + pl.col(REMOVES) + pl.col(EDITS)).alias("total_events"),
        (pl.col(ADDS) - pl.col(REMOVES)).alias("net_adds"),
    )
    # Every user counted made at least one of these changes.
    derived = users_within_counts(derived, UNIQUE_USERS, ["total_events"])
    order_by = _ORDER_BY[req.type]
    if req.type != "all":
        derived = derived.filter(pl.col(order_by) > 0)
    if noise:  # independent noise: the variances of the parts add up
        derived = derived.with_columns(
            (pl.col(f"{ADDS}_std") ** 2 + pl.col(f"{REMOVES}_std") ** 2 + pl.col(f"{EDITS}_std") ** 2).sqrt()
            .alias("total_events_std"),
            (pl.col(f"{ADDS}_std") ** 2 + pl.col(f"{REMOVES}_std") ** 2).sqrt().alias("net_adds_std"),
        )
    names = {m: m for m in (ADDS, REMOVES, EDITS, "total_events", UNIQUE_USERS, "net_adds")}
    return (
        first_rows(derived, [order_by, "keyword"], [True, False], req.limit, req.offset)
        .select("keyword", ADDS, REMOVES, EDITS, "total_events", UNIQUE_USERS, "net_adds",
                *std_columns(noise, names, derived.columns))
    )
