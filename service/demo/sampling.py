"""Sampling demo events: suppressions and keyword changes, sampled as indices (a few integers per event),
then materialised in the stored schema.

Suppression events: user by activity; keyword from that user's list (earlier entries match more
often, `FAVOURITE_SKEW`); domain, page context by the catalogue's weights; the user's platform
most of the time; a time from the timeline; a geometric number of suppressed items (mean about
2.2). Keyword changes: about `CHANGES_PER_EVENT` per suppression event, with the same users and
time model; adds outnumber removes and edits. Both carry the bursts' extra events (`bursts`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from service.demo import catalogue
from service.demo.bursts import Burst, with_bursts
from service.demo.draws import Random
from service.demo.timeline import Clock
from service.demo.world import World
from service.store import schema

CHANGES_PER_EVENT = 0.07
FAVOURITE_SKEW = 1.5  # > 1: keywords early in a user's list match more often than later ones
MAIN_PLATFORM_SHARE = 0.85
SUPPRESSED_ITEMS_P = 0.45  # geometric: 1 + Geometric(p) suppressed items per event


def _value_index(world: World, dimension: str, value: str) -> int:
    values = world.vocabulary if dimension == "keyword" else catalogue.values(dimension)
    return catalogue.index_of(values, value)


def _platforms(rnd: Random, world: World, user: pl.Series) -> pl.Series:
    """The user's own platform most of the time, else any platform by weight."""
    n = user.len()
    own = world.users["platform"].gather(user)
    main = rnd.uniform(n) < MAIN_PLATFORM_SHARE  # drawn before `other`: the order of draws makes the rows
    other = rnd.choice(n, catalogue.weights(catalogue.PLATFORMS)[1])
    return pl.select(pl.when(main).then(own).otherwise(other)).to_series()


def _suppression_rows(
    rnd: Random, world: World, clock: Clock, n: int, placed: tuple[pl.Series, pl.Series] | None = None
) -> pl.DataFrame:
    """n suppression events as indices (user, keyword, domain, ...) and time offsets.

    Users and times are sampled by the model unless `placed` gives them (user, t).
    """
    user, t = placed or (None, None)
    if user is None or t is None:
        user = rnd.choice(n, world.users["activity"])
        t = clock.sample(rnd, world.users["offset_hours"].gather(user))
    keyword = world.keywords(user, rnd.uniform(n) ** FAVOURITE_SKEW)
    u = rnd.uniform(n)
    items = 1 + ((1.0 - u).log() / math.log(1.0 - SUPPRESSED_ITEMS_P)).floor().cast(pl.Int32)
    return pl.DataFrame(
        {
            "t": t,
            "user": user,
            "keyword": keyword,
            "domain": rnd.choice(n, catalogue.weights(catalogue.DOMAINS)[1]),
            "platform": _platforms(rnd, world, user),
            "page_context": rnd.choice(n, catalogue.weights(catalogue.PAGE_CONTEXTS)[1]),
            "suppressions": items.clip(upper_bound=1000),
        }
    )


def _change_rows(
    rnd: Random, world: World, clock: Clock, n: int, placed: tuple[pl.Series, pl.Series] | None = None
) -> pl.DataFrame:
    """n keyword changes; users and times as for `_suppression_rows`."""
    user, t = placed or (None, None)
    if user is None or t is None:
        user = rnd.choice(n, world.users["activity"])
        t = clock.sample(rnd, world.users["offset_hours"].gather(user))
    return pl.DataFrame(
        {
            "t": t,
            "user": user,
            "keyword": world.keywords(user, rnd.uniform(n)),
            "action": rnd.choice(n, catalogue.weights(catalogue.ACTIONS)[1]),
            "platform": _platforms(rnd, world, user),
        }
    )


def suppressions(rnd: Random, world: World, clock: Clock, n: int, bursts: Sequence[Burst]) -> pl.DataFrame:
    rows = _suppression_rows(rnd, world, clock, n)
    plan = [(b.dimension, _value_index(world, b.dimension, b.value), b) for b in bursts]
    return with_bursts(rnd, rows, clock, plan, lambda k, placed: _suppression_rows(rnd, world, clock, k, placed))


def keyword_changes(rnd: Random, world: World, clock: Clock, n: int, bursts: Sequence[Burst]) -> pl.DataFrame:
    rows = _change_rows(rnd, world, clock, n)
    plan = [("keyword", _value_index(world, "keyword", b.value), b) for b in bursts if b.dimension == "keyword"]
    # People mute what is suddenly everywhere: a keyword burst shows as extra adds.
    add = {"action": catalogue.index_of(catalogue.values("action"), "add")}
    return with_bursts(rnd, rows, clock, plan, lambda k, placed: _change_rows(rnd, world, clock, k, placed), add)


# ---------------------------------------------------------------------------------------------
# Stored form


def _timestamps(rows: pl.DataFrame, clock: Clock) -> pl.Series:
    """The stored ts of rows already sorted by `t`; flagged sorted so the writer need not sort."""
    return (rows["t"] + clock.start_us).cast(schema.TS).alias("ts").set_sorted()


def materialise_suppressions(rows: pl.DataFrame, world: World, user_ids: pl.Series, clock: Clock) -> pl.DataFrame:
    users = world.users.select(pl.all().gather(rows["user"]))
    frame = pl.DataFrame(
        {
            "ts": _timestamps(rows, clock),
            "user_id": user_ids.gather(rows["user"]),
            "keyword": world.vocabulary.gather(rows["keyword"]),
            "domain": catalogue.values("domain").gather(rows["domain"]),
            "platform": catalogue.values("platform").gather(rows["platform"]),
            "page_context": catalogue.values("page_context").gather(rows["page_context"]),
            "country": users["country"],
            "region": users["region"],
            "county": users["county"],
            "city": users["city"],
            "suppressions": rows["suppressions"],
        }
    )
    return frame.select(pl.col(name).cast(dtype) for name, dtype in schema.SUPPRESSIONS_SCHEMA.items())


def materialise_changes(rows: pl.DataFrame, world: World, user_ids: pl.Series, clock: Clock) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "ts": _timestamps(rows, clock),
            "user_id": user_ids.gather(rows["user"]),
            "keyword": world.vocabulary.gather(rows["keyword"]),
            "action": catalogue.values("action").gather(rows["action"]),
            "platform": catalogue.values("platform").gather(rows["platform"]),
            "country": world.users["country"].gather(rows["user"]),
        }
    )
    return frame.select(pl.col(name).cast(dtype) for name, dtype in schema.KEYWORD_CHANGES_SCHEMA.items())
