"""`python -m service data count`: the landed events per table, on the polars store and on ClickHouse
(chdb), through the real command line; the events arrive through the collector's log and the
lander (`lander --once`)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

from service.collector import log as event_log
from service.collector.events import check_body
from tests.support.collector_events import NOW, keyword_change, many, ndjson, suppression, ts
from tests.support.processes import ROOT, service_env

SECRET = "count-secret"


def _run(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service", *args], cwd=ROOT,
                          env=service_env(data, SIGNALS_SECRET=SECRET, **env), capture_output=True, text=True,
                          timeout=180)


def _append(data: Path) -> None:
    events = [*many(25), suppression("old", ts=ts(30)), keyword_change("k1"), keyword_change("k2", ts=ts(30)),
              *many(5)]  # the last five repeat ids of the first batch
    for part in (events[:20], events[20:]):
        checked = check_body(ndjson(part), now=NOW, secret=SECRET, late_hours=48)
        event_log.append(data, event_log.batch_frame(checked.frames))


def _check_counts(data: Path, **env: str) -> None:
    landed = _run(data, "lander", "--once", **env)
    assert landed.returncode == 0, landed.stderr
    assert "landed 28 events" in landed.stdout
    done = _run(data, "data", "count", "--json", **env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"suppressions": 26, "keyword_changes": 2}
    since = (NOW - dt.timedelta(hours=10)).isoformat()
    recent = _run(data, "data", "count", "--json", "--since", since, **env)
    assert json.loads(recent.stdout) == {"suppressions": 25, "keyword_changes": 1}
    older = _run(data, "data", "count", "--json", "--table", "suppressions", "--until", since, **env)
    assert json.loads(older.stdout) == {"suppressions": 1}
    text = _run(data, "data", "count", **env)
    assert text.stdout.splitlines() == ["suppressions: 26", "keyword_changes: 2"]


def test_data_count_on_the_polars_store(tmp_path):
    data = tmp_path / "data"
    empty = _run(data, "data", "count", "--json")
    assert json.loads(empty.stdout) == {"suppressions": 0, "keyword_changes": 0}
    _append(data)
    _check_counts(data)


def test_data_count_on_clickhouse(tmp_path):
    data, url = tmp_path / "data", f"chdb://{tmp_path / 'chdb'}"
    env = {"SIGNALS_ENGINE": "clickhouse", "SIGNALS_CLICKHOUSE_URL": url}
    made = _run(data, "data", "clickhouse-init", **env)
    assert made.returncode == 0, made.stderr
    _append(data)
    _check_counts(data, **env)


def test_a_bad_time_is_a_usage_error(tmp_path):
    done = _run(tmp_path, "data", "count", "--since", "yesterday")
    assert done.returncode == 2 and "not an ISO 8601 time" in done.stderr
