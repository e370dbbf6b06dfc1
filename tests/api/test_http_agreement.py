"""Numbers that agree with each other over HTTP (issue 42), with the real noise on demo data: in
every row of every answer, a user count is at most the events and suppressions (keyword activity:
the list changes) beside it, in the records and in their previous period. The engine tests
(tests/engine/test_engine_reconcile.py) force the contradiction; here the real noise meets it."""

from __future__ import annotations

import datetime as dt

import falcon.testing
import pytest

from cache import LocalGate
from service.app import create_app
from service.clock import FixedClock
from service.demo.generate import generate_demo
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.http import get, post_query

DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def noisy(tmp_path_factory, accounts):
    data_dir = tmp_path_factory.mktemp("agreement-demo")
    generate_demo(data_dir, events=40_000, days=20, seed=5, end=DEMO_END, secret="test", progress=False)
    settings = Settings(data_dir=data_dir, secret="agreement-test-secret", cache_responses=False)
    return falcon.testing.TestClient(create_app(settings, clock=FixedClock(DEMO_END + dt.timedelta(minutes=5)),
                                                store=EventStore(data_dir), accounts=accounts, gate=LocalGate()))


def _check(records: list[dict], users: str, counts: tuple[str, ...]) -> int:
    assert records
    for record in records:
        for numbers in (record, record.get("previous") or record):
            assert numbers[users] <= min(numbers[c] for c in counts), record
    return len(records)


@pytest.mark.parametrize("path, query, field, users, counts", [
    ("/keyword-activity", "window=7d&limit=500&compare=previous_period", "keywords", "unique_users", ("total_events",)),
    ("/keyword-activity", "window=24h&limit=500", "keywords", "unique_users", ("total_events",)),
    ("/top-keywords", "window=7d&limit=500&compare=previous_period", "keywords", "users_est", ("suppressions",)),
    ("/geo-heat", "window=7d&level=city", "regions", "unique_users", ("suppressions",)),
    ("/keyword-timeseries", "keyword=climate change&window=30d&bucket=hour", "timeseries", "users_est",
     ("suppressions", "events")),
])
def test_every_get_row_agrees(noisy, keys, path, query, field, users, counts):
    result = get(noisy, path, keys["observer"], query)
    assert result.status_code == 200, result.text
    _check(result.json[field], users, counts)


def test_every_query_row_agrees(noisy, keys):
    body = {"window": "7d", "group_by": ["keyword", "platform", "time"], "bucket": "day", "limit": 1000,
            "order_by": "unique_users", "compare": "previous_period"}
    result = post_query(noisy, keys["analyst"], body)
    assert result.status_code == 200, result.text
    _check(result.json["results"], "unique_users", ("suppressions", "events"))


@pytest.mark.parametrize("path, query, field, key, dimension", [
    ("/top-keywords", "window=7d&limit=500", "keywords", "keyword_raw", "keyword"),
    ("/geo-heat", "window=7d&level=region", "regions", "geo_key", "region"),
])
def test_a_user_count_without_its_events_beside_it_agrees_with_them_too(noisy, keys, path, query, field, key,
                                                                         dimension):
    """top-keywords and geo-heat show no events, but /query shows them for the same cells: the
    user count agrees with those too (and the rows agree with /query's, as before)."""
    shown = get(noisy, path, keys["analyst"], query).json[field]
    cells = post_query(noisy, keys["analyst"], {"window": "7d", "group_by": [dimension], "limit": 1000}).json["results"]
    by_cell = {r[dimension if dimension == "keyword" else f"{dimension}_id"]: r for r in cells}
    users = "users_est" if path == "/top-keywords" else "unique_users"
    assert len(shown) > 10
    for record in shown:
        cell = by_cell[record[key]]
        assert (record["suppressions"], record[users]) == (cell["suppressions"], cell["unique_users"])
        assert record[users] <= min(cell["events"], cell["suppressions"])
