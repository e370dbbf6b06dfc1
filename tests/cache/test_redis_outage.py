"""Redis stopped or hanging: answers stay correct, repeated requests are served from the worker's
own bounded cache (same keys, ETags and headers; a new hour or data generation is never served
stale), limits are per process, readiness says so, the log warns once, and everything recovers by
itself when Redis returns."""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import signal
import time
import uuid

import falcon.testing
import polars as pl
import pytest

import cache
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.engine.polars import PolarsEngine as Engine
from service.privacy import Privacy
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.fixture_data import FIXTURE_NOW, suppressions_frame
from tests.support.http import assert_problem, get, post_query
from tests.support.landing import write_events
from tests.support.secret import TEST_SECRET

pytestmark = pytest.mark.redis


def wait_until_ready(client, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while client.simulate_get("/readyz").json["status"] != "ready":
        assert time.monotonic() < deadline, "did not recover"
        time.sleep(0.1)


class CountingEngine:
    """The real engine, counting the computations that reach it."""

    def __init__(self) -> None:
        self._inner, self.calls = Engine(Privacy.exact()), 0

    def __getattr__(self, name):
        method = getattr(self._inner, name)
        if name == "counts":  # what /query's cost bound counts, not a computation
            return method

        def counted(*args, **kwargs):
            self.calls += 1
            return method(*args, **kwargs)
        return counted


def build(server, fixture_data_dir, fixture_store, accounts, *, tier=Tier.OBSERVER, engine=None, clock=None,
          prefix=None):
    gate = cache.connect(server.url, prefix or f"outage-{uuid.uuid4().hex[:6]}:")
    gate._retry_seconds = 0.2  # probe Redis often, so recovery is quick in a test
    app = create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET, redis_url=server.url), clock=clock or FixedClock(FIXTURE_NOW),
                     store=fixture_store, accounts=accounts, gate=gate, engine=engine)
    key = accounts.create_key(tier, subscription=f"outage-{uuid.uuid4().hex[:8]}")[0]
    return falcon.testing.TestClient(app), key, gate


def test_redis_stopped_then_back(throwaway_redis, fixture_data_dir, fixture_store, accounts, caplog):
    engine = CountingEngine()
    prefix = f"outage-{uuid.uuid4().hex[:6]}:"
    client, key, gate = build(throwaway_redis, fixture_data_dir, fixture_store, accounts, engine=engine, prefix=prefix)
    healthy = get(client, "/top-keywords", key)
    assert healthy.headers["x-cache"] == "miss"
    assert get(client, "/top-keywords", key).headers["x-cache"] == "hit"
    assert client.simulate_get("/readyz").json["status"] == "ready"
    assert engine.calls == 1

    throwaway_redis.stop()
    caplog.set_level(logging.WARNING, logger="signals.cache")
    during = [get(client, "/top-keywords", key) for _ in range(3)]
    assert all(r.status_code == 200 for r in during)
    assert all(r.content == healthy.content and r.headers["etag"] == healthy.headers["etag"] for r in during)
    assert all(r.headers["x-cache"] == "hit" for r in during)  # the body this worker already had
    assert engine.calls == 1, "a body the worker holds is served, not computed again"
    assert during[0].headers["x-ratelimit-limit"] == "30"  # per-process limits still apply
    ready = client.simulate_get("/readyz")
    assert ready.status_code == 200 and ready.json["status"] == "degraded"
    assert ready.json["checks"]["cache"]["degraded"] is True
    assert "per-process cache" in ready.json["checks"]["cache"]["detail"]
    warnings = [r.getMessage() for r in caplog.records if "Redis unavailable" in r.getMessage()]
    assert len(warnings) == 1, "warn once, not per request"
    assert "per-process cache" in warnings[0]

    # An entry first asked for during the outage: computed once, then served from the worker.
    assert get(client, "/top-keywords", key, {"window": "7d"}).headers["x-cache"] == "miss"
    assert get(client, "/top-keywords", key, {"window": "7d"}).headers["x-cache"] == "hit"
    assert engine.calls == 2

    throwaway_redis.start()  # same port, empty: what was shared is gone
    wait_until_ready(client)
    assert any("Redis is back" in r.getMessage() for r in caplog.records)
    # Shared again: an entry one worker computes is a hit for another worker, with Redis's limits.
    other, _, other_gate = build(throwaway_redis, fixture_data_dir, fixture_store, accounts, engine=engine, prefix=prefix)
    assert get(client, "/top-keywords", key, {"window": "30d"}).headers["x-cache"] == "miss"
    shared = get(other, "/top-keywords", key, {"window": "30d"})
    assert shared.headers["x-cache"] == "hit" and engine.calls == 3
    assert int(shared.headers["x-ratelimit-remaining"]) == 30 - 2, "the subscription's window is Redis's again"
    # The worker's own copies stay valid (same keys, same bytes).
    assert get(client, "/top-keywords", key).headers["x-cache"] == "hit"
    assert engine.calls == 3
    gate.close()
    other_gate.close()


def test_etag_and_304_while_redis_is_down(throwaway_redis, fixture_data_dir, fixture_store, accounts):
    engine = CountingEngine()
    client, key, gate = build(throwaway_redis, fixture_data_dir, fixture_store, accounts, engine=engine,
                              tier=Tier.ANALYST)
    before = get(client, "/keyword-activity", key)
    throwaway_redis.stop()
    for header in (before.headers["etag"], f"W/{before.headers['etag']}", "*"):
        result = get(client, "/keyword-activity", key, headers={"If-None-Match": header})
        assert result.status_code == 304 and result.content == b""
        assert result.headers["etag"] == before.headers["etag"]
        assert result.headers["x-cache"] == "hit"
        for name in ("cache-control", "last-modified", "x-signals-as-of", "x-ratelimit-remaining"):
            assert result.headers[name], name
    assert get(client, "/keyword-activity", key, headers={"If-None-Match": '"other"'}).content == before.content
    assert engine.calls == 1

    body = {"window": "7d", "group_by": ["keyword"], "format": "csv"}  # computed during the outage
    first = post_query(client, key, body)
    assert first.headers["x-cache"] == "miss"
    again = post_query(client, key, body, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.headers["x-cache"] == "hit"
    full = post_query(client, key, body)
    assert full.headers["x-cache"] == "hit" and full.content == first.content
    assert full.headers["content-disposition"] == first.headers["content-disposition"]
    assert engine.calls == 2
    gate.close()


def test_a_new_hour_or_generation_is_not_served_stale_while_redis_is_down(throwaway_redis, tmp_path, fixture_data_dir,
                                                                          accounts):
    data_dir = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data_dir)
    store = EventStore(data_dir, check_interval=0)
    clock = FixedClock(FIXTURE_NOW - dt.timedelta(hours=1))  # data ends 12:20: as_of follows the hour until 13:00
    engine = CountingEngine()
    client, key, gate = build(throwaway_redis, data_dir, store, accounts, engine=engine, clock=clock,
                              tier=Tier.PROFESSIONAL)
    throwaway_redis.stop()
    seen = []

    def twice():
        for _ in range(2):  # no-cache: the current answer, never the previous one served stale (service/answers/stale.py)
            result = get(client, "/top-keywords", key, headers={"Cache-Control": "no-cache"})
            seen.append((result.headers["x-signals-as-of"], result.headers["x-signals-data-generation"],
                         result.headers["x-cache"]))
        return result

    first = twice()
    clock.advance(dt.timedelta(hours=1))
    next_hour = twice()
    extra = suppressions_frame().filter(pl.col("keyword") == "bitcoin").head(1).with_columns(
        pl.lit("brand new keyword").alias("keyword"), pl.lit(5000).cast(pl.Int32).alias("suppressions"),
        pl.lit(dt.datetime(2026, 3, 10, 9, tzinfo=dt.UTC)).dt.cast_time_unit("us").alias("ts"))
    write_events(data_dir, "suppressions", extra)
    ingested = twice()
    generation = int(first.headers["x-signals-data-generation"])
    assert seen == [
        ("2026-03-10T11:00:00Z", str(generation), "miss"), ("2026-03-10T11:00:00Z", str(generation), "hit"),
        ("2026-03-10T12:00:00Z", str(generation), "miss"), ("2026-03-10T12:00:00Z", str(generation), "hit"),
        ("2026-03-10T12:00:00Z", str(generation + 1), "miss"), ("2026-03-10T12:00:00Z", str(generation + 1), "hit"),
    ]
    assert ingested.json["keywords"][0]["keyword_raw"] == "brand new keyword"
    assert len({first.headers["etag"], next_hour.headers["etag"], ingested.headers["etag"]}) == 3
    assert engine.calls == 3
    gate.close()


class CountingCalls:
    """Wraps the Redis gate inside a ResilientGate, counting the calls that reach it."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, 0

    def __getattr__(self, name):
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def counted(*args, **kwargs):
            self.calls += 1
            return attribute(*args, **kwargs)
        return counted


def test_redis_hanging_costs_one_timeout_per_retry_interval(throwaway_redis, fixture_data_dir, fixture_store, accounts,
                                                           caplog):
    engine = CountingEngine()
    client, key, gate = build(throwaway_redis, fixture_data_dir, fixture_store, accounts, engine=engine)
    assert get(client, "/top-keywords", key).status_code == 200
    counting = gate._primary = CountingCalls(gate._primary)
    gate._retry_seconds = 600  # within one interval: Redis is tried once, then left alone
    caplog.set_level(logging.WARNING, logger="signals.cache")
    os.kill(throwaway_redis.process.pid, signal.SIGSTOP)  # accepts connections, never answers
    try:
        results = [get(client, "/top-keywords", key) for _ in range(5)]
        assert all(r.status_code == 200 and r.headers["x-cache"] == "hit" for r in results)
        assert all(r.content == results[0].content for r in results)
        assert engine.calls == 1
        assert counting.calls == 1, "one timed-out call, then the fallback until the retry interval ends"
        assert client.simulate_get("/readyz").json["status"] == "degraded"
        assert len([r for r in caplog.records if "Redis unavailable" in r.getMessage()]) == 1
    finally:
        os.kill(throwaway_redis.process.pid, signal.SIGCONT)
    gate._retry_seconds, gate._next_try = 0.2, 0.0
    wait_until_ready(client)
    gate.close()


def test_per_process_limits_hold_while_redis_is_down(throwaway_redis, fixture_data_dir, fixture_store, accounts):
    client, key, gate = build(throwaway_redis, fixture_data_dir, fixture_store, accounts)  # an Observer key: 30 a minute
    throwaway_redis.stop()
    statuses = [get(client, "/top-keywords", key).status_code for _ in range(30)]
    assert statuses == [200] * 30
    refused = get(client, "/top-keywords", key)
    assert_problem(refused, 429)
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    gate.close()


def test_a_worker_started_while_redis_is_down_serves_and_recovers(throwaway_redis, fixture_data_dir, fixture_store,
                                                                   accounts):
    throwaway_redis.stop()
    client, key, gate = build(throwaway_redis, fixture_data_dir, fixture_store, accounts)  # app built with Redis down
    assert get(client, "/top-keywords", key).headers["x-cache"] == "miss"
    assert get(client, "/top-keywords", key).headers["x-cache"] == "hit"
    assert client.simulate_get("/readyz").json["status"] == "degraded"
    throwaway_redis.start()
    wait_until_ready(client)
    get(client, "/top-keywords", key, {"window": "7d"})
    assert get(client, "/top-keywords", key, {"window": "7d"}).headers["x-cache"] == "hit"
    gate.close()
