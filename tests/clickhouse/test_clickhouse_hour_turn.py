"""The ClickHouse engine is served like the polars engine (issue 35, item 4): identical cold requests
computed once, the previous hour's answer served stale while the new one computes, the precompute
round making the most asked answers ready for the new hour, and the computation metrics, in
process on embedded ClickHouse holding the fixture's events (the same serving code as
tests/cache/test_stale_and_precompute.py and test_flights.py, with the other engine and store)."""

from __future__ import annotations

import threading
import time
import uuid

import falcon.testing
import pytest
from prometheus_client import REGISTRY

import cache
from service.answers.precompute import Precompute
from service.api.tiers import Tier
from service.app import create_app, signals_resources
from service.clickhouse.store import ClickHouseStore
from service.clock import FixedClock
from service.engine.clickhouse import ClickHouseEngine
from service.privacy import Privacy
from service.settings import Settings
from tests.support.engines import land
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.http import get
from tests.support.redis_app import delete_prefix
from tests.support.secret import TEST_SECRET

# The fixture's data end at 12:20: at 11:30 as_of is 11:00; at 12:05 it is 12:00.
BEFORE = FIXTURE_NOW.replace(hour=11, minute=30)
AFTER = FIXTURE_NOW.replace(hour=12, minute=5)


class Counting(ClickHouseEngine):
    """The ClickHouse engine, counting its geo-heat computations (and taking a little longer)."""

    def __init__(self) -> None:
        super().__init__(Privacy.exact())
        self.calls = 0
        self._lock = threading.Lock()

    def geo_heat(self, snapshot, as_of, req):
        with self._lock:
            self.calls += 1
        time.sleep(0.3)
        return super().geo_heat(snapshot, as_of, req)


@pytest.fixture(scope="module")
def store(fixture_store, chdb_dir):
    return ClickHouseStore(land(fixture_store.snapshot(), chdb_dir).ch)


def build(store, accounts, gate, clock, engine=None, **settings):
    app_settings = Settings(engine="clickhouse", clickhouse_url=store.ch.url, secret=TEST_SECRET, **settings)
    engine = engine or ClickHouseEngine(Privacy.exact())
    app = create_app(app_settings, clock=clock, store=store, accounts=accounts, gate=gate, engine=engine)
    key = accounts.create_key(Tier.PROFESSIONAL, subscription=f"ch-turn-{uuid.uuid4().hex[:8]}")[0]
    return falcon.testing.TestClient(app), key, app_settings, engine


def computed(endpoint: str, origin: str) -> float:
    return REGISTRY.get_sample_value("signals_computations_total", {"endpoint": endpoint, "origin": origin}) or 0.0


def test_identical_cold_requests_are_computed_once_and_counted(store, accounts):
    client, key, _, engine = build(store, accounts, cache.LocalGate(), FixedClock(BEFORE), engine=Counting())
    before = computed("geo_heat", "request")
    answers: list[falcon.testing.Result] = []
    threads = [threading.Thread(target=lambda: answers.append(get(client, "/geo-heat", key, {"window": "7d"})))
               for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert engine.calls == 1
    assert {a.status_code for a in answers} == {200} and len({a.content for a in answers}) == 1
    assert computed("geo_heat", "request") == before + 1
    assert REGISTRY.get_sample_value("signals_compute_seconds_count", {"endpoint": "geo_heat"}) >= 1


def test_the_previous_answer_is_served_stale_while_the_current_computes(store, accounts):
    clock = FixedClock(BEFORE)
    client, key, _, _ = build(store, accounts, cache.LocalGate(), clock)
    first = get(client, "/geo-heat", key, {"window": "7d"})
    assert first.headers["x-signals-as-of"] == "2026-03-10T11:00:00Z"
    clock.advance(AFTER - BEFORE)
    stale = get(client, "/geo-heat", key, {"window": "7d"})
    assert stale.status_code == 200 and stale.headers["x-cache"] == "stale"
    assert stale.json["as_of"] == "2026-03-10T11:00:00Z"
    assert {k: v for k, v in stale.json.items() if k != "as_of"} == first.json
    deadline = time.monotonic() + 10
    while (current := get(client, "/geo-heat", key, {"window": "7d"})).headers["x-cache"] != "hit":
        assert time.monotonic() < deadline, "the current answer was never computed"
        time.sleep(0.05)
    assert current.headers["x-signals-as-of"] == "2026-03-10T12:00:00Z"


@pytest.mark.redis
def test_a_precompute_round_makes_the_most_asked_ready_for_the_new_hour(store, accounts, redis_url, redis_prefix):
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    web_gate, precompute_gate = cache.connect(redis_url, prefix), cache.connect(redis_url, prefix)
    clock = FixedClock(BEFORE)
    try:
        client, key, settings, engine = build(store, accounts, web_gate, clock, redis_url=redis_url, redis_prefix=prefix)
        asked = [("/top-keywords", {"window": "7d"}), ("/geo-heat", {"window": "24h", "level": "county"})]
        for path, query in asked:
            get(client, path, key, query)
        resources = signals_resources(settings, engine, store, clock, precompute_gate, background=True)
        precompute = Precompute(store, resources, precompute_gate, clock, top=10)
        before = computed("top_keywords", "precompute")
        clock.advance(AFTER - BEFORE)
        report = precompute.run_round(precompute.due())
        assert (report.asked, report.computed, report.failed) == (2, 2, 0)
        assert computed("top_keywords", "precompute") == before + 1
        answers = [get(client, path, key, query) for path, query in asked]
        assert [a.headers["x-cache"] for a in answers] == ["hit", "hit"]
        assert {a.headers["x-signals-as-of"] for a in answers} == {"2026-03-10T12:00:00Z"}
    finally:
        web_gate.close()
        precompute_gate.close()
        delete_prefix(redis_url, prefix)
