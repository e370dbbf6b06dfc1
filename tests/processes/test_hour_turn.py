"""The hour turn over the real processes (issue 32): the Procfile's web (gunicorn, 3 workers ×
threads) and precompute over the real Redis, with the test hooks of tests/support/hooks (a clock
the test moves, computations held open) and the metrics read where an operator scrapes them."""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as dt
import os
import shutil
import signal
import time
import uuid
from pathlib import Path

import httpx
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.support.fixture_data import FIXTURE_NOW
from tests.support.processes import ROOT, create_key, gunicorn_process
from tests.support.redis_server import free_port
from tests.support.worker import procfile_process

pytestmark = [pytest.mark.process, pytest.mark.redis]

HOOKS = ROOT / "tests" / "support" / "hooks"
API = "/api/v1/signals"


@contextlib.contextmanager
def deployment(tmp_path: Path, fixture_data_dir: Path, redis_url: str, redis_prefix: str, *, slow: float = 0.0,
               at: dt.datetime | None = None, **env: str):
    """The web process on a copy of the fixture data with its own Redis prefix and metrics port;
    yields (base URL, metrics URL, a Professional key, the data dir, its environment, clock file)."""
    data_dir = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data_dir)
    clock = tmp_path / "clock"
    clock.write_text((at or FIXTURE_NOW).isoformat())
    metrics_port = free_port()
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    hooked = {
        "PYTHONPATH": f"{HOOKS}:{ROOT}", "SIGNALS_TEST_CLOCK_FILE": str(clock),
        "REDIS_URL": redis_url, "SIGNALS_REDIS_PREFIX": prefix, "WEB_CONCURRENCY": "3",
        "SIGNALS_METRICS_PORT": str(metrics_port),
        **({"SIGNALS_TEST_SLOW_COMPUTE_SECONDS": str(slow)} if slow else {}), **env,
    }
    key = create_key(data_dir, "professional")
    try:
        with gunicorn_process(data_dir, **hooked) as (base, _log, _pid):
            yield base, f"http://127.0.0.1:{metrics_port}/metrics", key, data_dir, hooked, clock
    finally:
        client = redis.Redis.from_url(redis_url)
        for stale_key in client.scan_iter(f"{prefix}*"):
            client.delete(stale_key)
        client.close()


def metric(url: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples with these labels, as Prometheus would scrape it."""
    total = 0.0
    for family in text_string_to_metric_families(httpx.get(url, timeout=5).text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def ask(base: str, key: str, path: str, headers: dict | None = None, retries: int = 0) -> httpx.Response:
    """One GET; a connection that fails (its worker was killed) is tried again, as clients do."""
    for attempt in range(retries + 1):
        try:
            return httpx.get(base + API + path, headers={"Authorization": f"Bearer {key}", **(headers or {})},
                             timeout=60)
        except httpx.TransportError:
            if attempt == retries:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


def at_once(count: int, call) -> list:
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: call(), range(count)))


def test_thirty_identical_cold_requests_compute_once(tmp_path, fixture_data_dir, redis_url, redis_prefix):
    with deployment(tmp_path, fixture_data_dir, redis_url, redis_prefix, slow=1.5) as (base, metrics_url, key, *_):
        answers = at_once(30, lambda: ask(base, key, "/top-keywords?window=7d&limit=7"))
        assert [a.status_code for a in answers] == [200] * 30
        assert len({a.content for a in answers}) == 1
        assert metric(metrics_url, "signals_computations_total", endpoint="top_keywords") == 1
        assert metric(metrics_url, "signals_cache_answers_total", endpoint="top_keywords") == 30
        assert metric(metrics_url, "signals_requests_total", endpoint="/api/v1/signals/top-keywords", status="200") == 30


def test_the_computing_worker_killed_another_finishes(tmp_path, fixture_data_dir, redis_url, redis_prefix):
    with deployment(tmp_path, fixture_data_dir, redis_url, redis_prefix, slow=4.0) as (base, metrics_url, key, _d, env, _c):
        fill = redis.Redis.from_url(redis_url)
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            futures = [pool.submit(ask, base, key, "/geo-heat?window=7d", None, 3) for _ in range(12)]
            deadline = time.monotonic() + 10
            holder = None
            while holder is None and time.monotonic() < deadline:
                for lock in fill.scan_iter(f"{env['SIGNALS_REDIS_PREFIX']}fill:*"):
                    value = fill.get(lock)
                    if value:
                        holder = int(value.decode().split("|", 1)[1].split()[1])
                time.sleep(0.1)
            assert holder is not None, "no worker took the fill lock"
            os.kill(holder, signal.SIGKILL)  # mid-way through its 4 s computation
            answers = [f.result(timeout=60) for f in futures]
        fill.close()
        assert [a.status_code for a in answers] == [200] * 12
        assert len({a.content for a in answers}) == 1
        # The killed worker's computation never finished; another worker's did, once.
        assert metric(metrics_url, "signals_computations_total", endpoint="geo_heat") == 1


def test_overload_is_answered_at_once_with_retry_after(tmp_path, fixture_data_dir, redis_url, redis_prefix):
    with deployment(tmp_path, fixture_data_dir, redis_url, redis_prefix, slow=3.0, SIGNALS_COMPUTE_SLOTS="1",
                    SIGNALS_WAIT_SECONDS="4") as (base, metrics_url, key, *_):
        # The machine learns how long a top-keywords answer takes (about 3 s; longer on a busy machine).
        learning = time.monotonic()
        assert ask(base, key, "/top-keywords?window=24h").status_code == 200
        learned = time.monotonic() - learning
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first = pool.submit(ask, base, key, "/top-keywords?window=7d")  # expected in 3 s: it waits
            time.sleep(0.5)  # it holds the only slot for 3 s
            started = time.monotonic()
            refused = ask(base, key, "/top-keywords?window=30d")  # expected in about 5.5 s: more than its 4
            took = time.monotonic() - started
            assert first.result().status_code == 200
        assert refused.status_code == 503 and took < 1.0, (refused.status_code, took)
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"].endswith("answer-not-ready")
        retry_after = int(refused.headers["retry-after"])
        # About the slot holder's rest plus its own computation: a few of the learned durations, not
        # minutes (on a busy machine the learned duration, and so the hint, is longer).
        assert 1 <= retry_after <= max(10.0, 4 * learned), (retry_after, learned)
        time.sleep(retry_after)
        again = ask(base, key, "/top-keywords?window=30d")
        # Its computation went on while the client waited: the retry is answered from the cache.
        assert again.status_code == 200 and again.headers["x-cache"] == "hit"
        assert metric(metrics_url, "signals_requests_shed_total", endpoint="top_keywords") >= 1


def test_after_the_hour_turn_precompute_makes_the_first_request_a_hit(tmp_path, fixture_data_dir, redis_url,
                                                                      redis_prefix):
    # The fixture's data end at 12:20: at 11:30 as_of is 11:00, at 12:05 it is 12:00.
    before = FIXTURE_NOW.replace(hour=11, minute=30)
    with deployment(tmp_path, fixture_data_dir, redis_url, redis_prefix, at=before, slow=1.0) as \
            (base, metrics_url, key, data_dir, env, clock):
        asked = ["/top-keywords?window=24h", "/geo-heat?window=7d&level=region", "/trending?window=24h"]
        for path in asked:
            assert ask(base, key, path).headers["x-signals-as-of"] == "2026-03-10T11:00:00Z"
        with procfile_process("precompute", data_dir, **env) as output:
            wait_for(lambda: metric(metrics_url, "signals_precomputed_total") >= 3, "the first round (11:00)")
            clock.write_text(FIXTURE_NOW.replace(hour=12, minute=5).isoformat())  # the hour turns
            # Before precompute has finished, the previous hour's answer, labelled stale:
            stale = ask(base, key, asked[1])
            assert stale.status_code == 200
            assert stale.headers["x-cache"] == "stale" and stale.headers["x-signals-as-of"] == "2026-03-10T11:00:00Z"
            assert stale.json()["as_of"] == "2026-03-10T11:00:00Z"
            assert "stale-while-revalidate" in stale.headers["cache-status"] and int(stale.headers["age"]) >= 0
            assert stale.headers["last-modified"] == "Tue, 10 Mar 2026 11:00:00 GMT"
            wait_for(lambda: metric(metrics_url, "signals_precomputed_total") >= 6, "the round after the turn")
            first = [ask(base, key, path) for path in asked]
        assert [a.headers["x-cache"] for a in first] == ["hit"] * 3, output
        assert {a.headers["x-signals-as-of"] for a in first} == {"2026-03-10T12:00:00Z"}
        assert metric(metrics_url, "signals_precompute_lag_seconds") > 0
        # no-cache asks for the current answer (here already computed), never a stale one
        current = ask(base, key, asked[1], {"Cache-Control": "no-cache"})
        assert current.headers["x-signals-as-of"] == "2026-03-10T12:00:00Z"


def test_metrics_are_on_their_own_port_not_the_apis(tmp_path, fixture_data_dir, redis_url, redis_prefix):
    with deployment(tmp_path, fixture_data_dir, redis_url, redis_prefix) as (base, metrics_url, key, *_):
        assert httpx.get(metrics_url, timeout=5).status_code == 200
        for headers in ({}, {"Authorization": f"Bearer {key}"}):
            assert httpx.get(base + "/metrics", headers=headers, timeout=5).status_code == 404
        assert metric(metrics_url, "signals_redis_degraded") == 0


def wait_for(condition, what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
