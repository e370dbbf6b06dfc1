"""The /query cost bound counted in SQL on ClickHouse equals the polars engine's, term by term, so
a query is refused (and narrowed) alike on either engine (engine/clickhouse/counts.py)."""

from __future__ import annotations

import random

import pytest

from service.engine import cost as query_cost
from service.engine.clickhouse.counts import ClickHouseCounts
from service.engine.polars.counts import FrameCounts
from tests.support.engines import land
from tests.support.query_cases import AS_OF, random_bodies, random_frames, request


@pytest.fixture(scope="module")
def both(chdb_dir):
    rng = random.Random(23)
    frames = random_frames(rng)
    return frames, land(frames, chdb_dir), rng


def test_estimates_are_equal_for_random_queries(both) -> None:
    frames, snapshot, rng = both
    compared = with_factors = 0
    for body in random_bodies(rng, 120):
        req = request(body)
        polars_cost = query_cost.estimate(FrameCounts(frames), AS_OF, req)
        assert query_cost.estimate(ClickHouseCounts(snapshot), AS_OF, req) == polars_cost, body
        compared += 1
        with_factors += bool(polars_cost.factors)
    assert compared == 120 and with_factors > 20  # the dimension counts were compared, not only the rows


def test_refusals_and_narrowings_are_equal(both) -> None:
    frames, snapshot, _ = both
    req = request({"window": "90d", "group_by": ["keyword", "city", "time"], "bucket": "hour"})
    refusals = []
    for source in (FrameCounts(frames), ClickHouseCounts(snapshot)):
        with pytest.raises(query_cost.QueryTooLarge) as refused:
            query_cost.check(source, AS_OF, req, 300)
        refusals.append(refused.value)
    assert refusals[0].detail() == refusals[1].detail()
    assert refusals[0].narrowings == refusals[1].narrowings and refusals[0].narrowings
