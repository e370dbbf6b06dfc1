"""Random /query cases for the cost bound: random frames (nulls, partial geography) and random
bodies over their values, as the polars and the ClickHouse cost tests both draw them."""

from __future__ import annotations

import datetime as dt
import random

import polars as pl

from service.engine.requests import GROUP_BY_DIMENSIONS, FlexibleQuery
from service.store import schema
from service.store.reader import EventFrames, build_frames

AS_OF = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)


def request(body: dict) -> FlexibleQuery:
    filters = {key: tuple(sorted(set(values))) for key, values in sorted(body.get("filters", {}).items())}
    return FlexibleQuery(window=body["window"], filters=filters, group_by=tuple(body.get("group_by", ())),
                         bucket=body.get("bucket"))


def random_frames(rng: random.Random, n: int = 4_000) -> EventFrames:
    """Random data with nulls and partial geography over 100 days."""
    start = AS_OF - dt.timedelta(days=100)
    places = [("US", "US-CA", "06037", "5368361"), ("US", "US-CA", "06059", None), ("US", "US-NY", "36061", "5128581"),
              ("DE", "DE-BE", None, "2950159"), ("DE", None, None, None), ("GB", "GB-ENG", None, "2643743"),
              ("FR", None, None, "2988507")]
    rows = []
    for _ in range(n):
        place = rng.choice(places)
        rows.append({
            "ts": start + dt.timedelta(minutes=rng.randrange(100 * 24 * 60)),
            "user_id": rng.randrange(300), "keyword": f"k{int(rng.paretovariate(1.2)) % 60}",
            "domain": rng.choice(["a.com", "b.com", "c.org", "d.net"]), "platform": rng.choice(schema.PLATFORMS),
            "page_context": rng.choice(schema.PAGE_CONTEXTS), "country": place[0], "region": place[1],
            "county": place[2], "city": place[3], "suppressions": rng.randint(1, 5),
        })
    return build_frames(pl.DataFrame(rows, schema=schema.SUPPRESSIONS_SCHEMA),
                        pl.DataFrame(schema=schema.KEYWORD_CHANGES_SCHEMA), generation=1)


def random_bodies(rng: random.Random, count: int) -> list[dict]:
    """Random /query bodies over random_frames' values."""
    filter_values = {"keywords": ["k1", "k2", "k40", "nope"], "domains": ["a.com", "c.org"], "platforms": ["chrome"],
                     "page_contexts": ["feed", "video"], "countries": ["US", "GB"], "regions": ["US-CA"],
                     "counties": ["06037"], "cities": ["2950159", "5128581"]}
    bodies = []
    for _ in range(count):
        group_by = rng.sample(GROUP_BY_DIMENSIONS, rng.randint(0, 5))
        bodies.append({"window": rng.choice(["1h", "24h", "7d", "30d", "90d"]), "group_by": group_by,
                       "bucket": rng.choice(["hour", "day", "week"]) if "time" in group_by else None,
                       "filters": {key: rng.sample(values, rng.randint(1, len(values)))
                                   for key, values in filter_values.items() if rng.random() < 0.25}})
    return bodies
