"""Redis stopped or hanging: answers stay correct (uncached, per-process limits), readiness says
so, the log warns once, and everything recovers by itself when Redis returns."""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid

import falcon.testing
import pytest

import cache
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from service.tiers import Tier
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.http import assert_problem, get
from tests.support.redis_server import ThrowawayRedis

pytestmark = pytest.mark.redis


@pytest.fixture
def throwaway():
    server = ThrowawayRedis().start()
    yield server
    if server.process and server.process.poll() is None:
        os.kill(server.process.pid, signal.SIGCONT)
    server.stop()


def wait_until_ready(client, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while client.simulate_get("/readyz").json["status"] != "ready":
        assert time.monotonic() < deadline, "did not recover"
        time.sleep(0.1)


def build(server, fixture_data_dir, fixture_store, accounts):
    gate = cache.connect(server.url, f"outage-{uuid.uuid4().hex[:6]}:")
    gate._retry_seconds = 0.2  # probe Redis often, so recovery is quick in a test
    app = create_app(Settings(data_dir=fixture_data_dir, redis_url=server.url), clock=FixedClock(FIXTURE_NOW),
                     store=fixture_store, accounts=accounts, gate=gate)
    key = accounts.create_key(Tier.OBSERVER, subscription=f"outage-{uuid.uuid4().hex[:8]}")[0]
    return falcon.testing.TestClient(app), key, gate


def test_redis_stopped_then_back(throwaway, fixture_data_dir, fixture_store, accounts, caplog):
    client, key, gate = build(throwaway, fixture_data_dir, fixture_store, accounts)
    healthy = get(client, "/top-keywords", key)
    assert healthy.headers["x-cache"] == "miss"
    assert get(client, "/top-keywords", key).headers["x-cache"] == "hit"
    assert client.simulate_get("/readyz").json["status"] == "ready"

    throwaway.stop()
    caplog.set_level(logging.WARNING, logger="signals.cache")
    during = [get(client, "/top-keywords", key) for _ in range(3)]
    assert all(r.status_code == 200 for r in during)
    assert all(r.content == healthy.content for r in during)  # the same correct answer, uncached
    assert all(r.headers["x-cache"] == "miss" for r in during)
    assert during[0].headers["x-ratelimit-limit"] == "30"  # per-process limits still apply
    ready = client.simulate_get("/readyz")
    assert ready.status_code == 200 and ready.json["status"] == "degraded"
    assert ready.json["checks"]["cache"]["degraded"] is True
    warnings = [r for r in caplog.records if "Redis unavailable" in r.getMessage()]
    assert len(warnings) == 1, "warn once, not per request"

    throwaway.start()  # same port
    wait_until_ready(client)
    get(client, "/top-keywords", key)
    assert get(client, "/top-keywords", key).headers["x-cache"] == "hit"
    assert any("Redis is back" in r.getMessage() for r in caplog.records)
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


def test_redis_hanging_costs_one_timeout_per_retry_interval(throwaway, fixture_data_dir, fixture_store, accounts,
                                                           caplog):
    client, key, gate = build(throwaway, fixture_data_dir, fixture_store, accounts)
    assert get(client, "/top-keywords", key).status_code == 200
    counting = gate._primary = CountingCalls(gate._primary)
    gate._retry_seconds = 600  # within one interval: Redis is tried once, then left alone
    caplog.set_level(logging.WARNING, logger="signals.cache")
    os.kill(throwaway.process.pid, signal.SIGSTOP)  # accepts connections, never answers
    try:
        results = [get(client, "/top-keywords", key) for _ in range(5)]
        assert all(r.status_code == 200 for r in results)
        assert all(r.content == results[0].content for r in results)
        assert counting.calls == 1, "one timed-out call, then the fallback until the retry interval ends"
        assert client.simulate_get("/readyz").json["status"] == "degraded"
        assert len([r for r in caplog.records if "Redis unavailable" in r.getMessage()]) == 1
    finally:
        os.kill(throwaway.process.pid, signal.SIGCONT)
    gate._retry_seconds, gate._next_try = 0.2, 0.0
    wait_until_ready(client)
    gate.close()


def test_per_process_limits_hold_while_redis_is_down(throwaway, fixture_data_dir, fixture_store, accounts):
    client, key, gate = build(throwaway, fixture_data_dir, fixture_store, accounts)  # an Observer key: 30 a minute
    throwaway.stop()
    statuses = [get(client, "/top-keywords", key).status_code for _ in range(30)]
    assert statuses == [200] * 30
    refused = get(client, "/top-keywords", key)
    assert_problem(refused, 429)
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    gate.close()


def test_a_worker_started_while_redis_is_down_serves_and_recovers(throwaway, fixture_data_dir, fixture_store,
                                                                   accounts):
    throwaway.stop()
    client, key, gate = build(throwaway, fixture_data_dir, fixture_store, accounts)  # app built with Redis down
    assert get(client, "/top-keywords", key).status_code == 200
    assert client.simulate_get("/readyz").json["status"] == "degraded"
    throwaway.start()
    wait_until_ready(client)
    get(client, "/top-keywords", key)
    assert get(client, "/top-keywords", key).headers["x-cache"] == "hit"
    gate.close()
