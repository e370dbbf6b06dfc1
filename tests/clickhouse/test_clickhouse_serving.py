"""Serving from ClickHouse: the compute deadline stops the query in ClickHouse too (not only the
caller), what chdb cannot do is refused with a message, and the settings are checked."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import falcon.testing
import pytest

from cache import LocalGate
from service.answers.deadline import DeadlineExceeded, work_limit
from service.api.tiers import Tier
from service.app import create_app
from service.backend import clickhouse, web_workers_refusal
from service.clickhouse.store import ClickHouseStore
from service.clock import FixedClock
from service.engine.clickhouse import ClickHouseEngine
from service.privacy import Privacy
from service.settings import Settings, SettingsError
from tests.support.engines import fresh_database
from tests.support.secret import TEST_SECRET

# Counting 10^11 numbers takes minutes: a query only a deadline ends.
SLOW = "SELECT count() AS n FROM numbers(100000000000) WHERE sipHash64(number) % 7 = 3"


def _running_slow_queries(ch) -> int:
    return int(ch.frame("SELECT count() AS n FROM system.processes WHERE query LIKE '%numbers(100000000000)%' "
                        "AND query NOT LIKE '%system.processes%'").item())


def test_max_execution_time_stops_the_query_in_clickhouse(chdb_dir: Path) -> None:
    ch = fresh_database(chdb_dir, "deadline")
    ch.deadline_seconds = 0.5
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        ch.frame(SLOW)
    assert time.monotonic() - started < 5
    assert _running_slow_queries(ch) == 0  # stopped server-side, not left running


def test_the_request_deadline_answers_503_and_the_query_is_stopped(chdb_dir: Path, accounts) -> None:
    """The app's ClickHouse connection carries SIGNALS_COMPUTE_DEADLINE_SECONDS as max_execution_time
    (service/backend.py); the resource's own timer (service/answers/deadline.py) and ClickHouse agree."""
    ch = fresh_database(chdb_dir, "deadline_http")
    settings = Settings(secret=TEST_SECRET, compute_deadline_seconds=0.5, cache_responses=False, engine="clickhouse",
                        clickhouse_url=f"chdb://{chdb_dir}")
    ch.deadline_seconds = clickhouse(settings).deadline_seconds

    class Slow(ClickHouseEngine):
        def top_keywords(self, snapshot, as_of, req):
            return snapshot.ch.frame(SLOW)

    app = create_app(settings, clock=FixedClock(dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)), store=ClickHouseStore(ch),
                     accounts=accounts, gate=LocalGate(), engine=Slow(Privacy.exact()))
    key = accounts.create_key(Tier.OBSERVER, subscription="deadline-ch")[0]
    started = time.monotonic()
    answer = falcon.testing.TestClient(app).simulate_get("/api/v1/signals/top-keywords",
                                                         headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 503, answer.text
    assert "0.5 seconds" in answer.json["detail"]
    assert time.monotonic() - started < 5
    assert _running_slow_queries(ch) == 0


def test_a_query_gets_the_time_left_of_the_request_deadline(chdb_dir: Path) -> None:
    """chdb does not return to Python until the query ends, so the caller's timer alone could not
    stop it: the query is given the time left as max_execution_time."""
    ch = fresh_database(chdb_dir, "deadline_timer")
    ch.deadline_seconds = 30.0  # the connection's own limit is far later than the request's
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded), work_limit(0.12):  # its wall-clock backstop: 0.6 s
        time.sleep(0.3)
        ch.frame(SLOW)  # ~0.3 s left
    assert time.monotonic() - started < 2
    assert _running_slow_queries(ch) == 0


def test_several_web_workers_on_chdb_are_refused() -> None:
    embedded = Settings(engine="clickhouse", clickhouse_url="chdb:///srv/signals")
    refusal = web_workers_refusal(embedded, 3)
    assert refusal is not None and "WEB_CONCURRENCY=1" in refusal
    assert web_workers_refusal(embedded, 1) is None
    server = Settings(engine="clickhouse", clickhouse_url="http://default:pw@clickhouse:8123/signals")
    assert web_workers_refusal(server, 8) is None
    assert web_workers_refusal(Settings(), 8) is None


def test_engine_settings_are_checked() -> None:
    assert Settings.from_env({}).engine == "polars"
    chosen = Settings.from_env({"SIGNALS_ENGINE": "ClickHouse", "SIGNALS_CLICKHOUSE_URL": "chdb:///var/lib/signals"})
    assert (chosen.engine, chosen.clickhouse_url, chosen.uses_clickhouse) == ("clickhouse", "chdb:///var/lib/signals", True)
    with pytest.raises(SettingsError, match="SIGNALS_CLICKHOUSE_URL"):
        Settings.from_env({"SIGNALS_ENGINE": "clickhouse"})
    with pytest.raises(SettingsError, match="SIGNALS_ENGINE"):
        Settings.from_env({"SIGNALS_ENGINE": "duckdb"})


def test_a_missing_schema_names_the_command(chdb_dir: Path) -> None:
    from service.clickhouse.connection import ClickHouse
    from service.clickhouse.schema import SchemaMissing

    bare = ClickHouse(f"chdb://{chdb_dir}", database="never_initialised")
    with pytest.raises(SchemaMissing, match="python -m service data clickhouse-init"):
        ClickHouseStore(bare).snapshot()


def test_demo_then_worker_and_precompute_on_chdb_and_refusals_while_held(tmp_path: Path, chdb_dir: Path) -> None:
    """The command line on chdb: demo lands in ClickHouse and the alert worker reads it; on a directory
    another process holds (this test process holds the session's), the worker and the demo are
    refused with the reason instead of a traceback."""
    import subprocess
    import sys

    from tests.support.processes import ROOT, service_env

    def cli(url: str, *args: str) -> subprocess.CompletedProcess:
        env = service_env(tmp_path / "data", SIGNALS_ENGINE="clickhouse", SIGNALS_CLICKHOUSE_URL=url)
        return subprocess.run([sys.executable, "-m", "service", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)

    own = f"chdb://{tmp_path / 'chdb'}"
    missing = cli(own, "data", "demo", "--events", "2000", "--days", "3", "--no-progress")
    assert missing.returncode == 1 and "data clickhouse-init" in missing.stderr
    assert cli(own, "data", "clickhouse-init").returncode == 0
    demo = cli(own, "data", "demo", "--events", "20000", "--days", "3", "--no-progress")
    assert demo.returncode == 0 and "Demo data in ClickHouse: 20,000 suppressions" in demo.stdout, demo.stderr
    assert not (tmp_path / "data" / "suppressions").exists()
    worker = cli(own, "worker", "--once")
    assert worker.returncode == 0 and "evaluated 0 webhooks" in worker.stdout, worker.stderr
    precompute = cli(own, "precompute", "--once")  # no Redis: nothing asked, nothing to do, and it says so
    assert precompute.returncode == 0 and "0 computed" in precompute.stdout, precompute.stderr
    assert "REDIS_URL is not set" in precompute.stderr

    holder = fresh_database(chdb_dir, "held")  # this process holds the session directory while it is open
    held = f"chdb://{chdb_dir}"
    for args in (("worker", "--once"), ("precompute", "--once"), ("data", "demo", "--events", "1000", "--no-progress")):
        refused = cli(held, *args)
        assert refused.returncode == 1 and "held by another process" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    holder.close()
