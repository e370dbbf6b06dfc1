"""Serving from the release over HTTP (SIGNALS_PRIVACY_RELEASE=1): every GET and /query in the
menu answered from released numbers, GET /api/v1/privacy without a key, and no request that
changes the release."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import falcon.testing
import pytest

from cache import LocalGate
from service.accounts import AccountStore
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from tests.release.conftest import RELEASE_SECRET
from tests.support.fixture_data import FIXTURE_NOW

API = "/api/v1/signals"


@pytest.fixture
def release_client(released_dir: Path, accounts: AccountStore) -> falcon.testing.TestClient:
    settings = Settings(data_dir=released_dir, privacy_release=True, secret=RELEASE_SECRET)
    return falcon.testing.TestClient(create_app(settings, clock=FixedClock(FIXTURE_NOW), accounts=accounts,
                                                gate=LocalGate()))


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted((root / "release").rglob("*")):
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def test_privacy_states_the_unit_the_bound_and_the_tables_without_a_key(release_client) -> None:
    answer = release_client.simulate_get("/api/v1/privacy")
    assert answer.status_code == 200
    body = answer.json
    assert body["unit"] == "user-day"
    assert body["delta"] <= 1e-9
    assert 0 < body["epsilon_per_user_day"] <= 4 and 0 < body["epsilon_per_user_month"] <= 30
    assert body["accountant"].startswith("dp-accounting")
    names = {t["name"] for t in body["tables"]}
    assert {"keywords", "domains", "platforms", "page_contexts", "countries", "regions", "counties", "cities",
            "keyword_changes"} == names
    for table in body["tables"]:
        assert table["dimensions"] and table["measures"] and table["schedule"] and 0 < table["share"] < 1
    assert abs(sum(t["share"] for t in body["tables"]) - 1) < 0.01


@pytest.mark.parametrize("path, records", [
    ("/top-keywords?window=7d&limit=5", "keywords"),
    ("/keyword-timeseries?keyword=elon%20musk&window=24h&bucket=hour", "timeseries"),
    ("/domain-timeseries?domain=reddit.com&window=7d&bucket=day", "timeseries"),
    ("/geo-heat?window=30d&level=country", "regions"),
    ("/trending?window=24h", "trending"),
    ("/keyword-activity?window=30d", "keywords"),
    ("/top-keywords?window=30d&compare=previous_period&intervals=true", "keywords"),
])
def test_every_get_answers_from_the_release(release_client, keys, path: str, records: str) -> None:
    answer = release_client.simulate_get(API + path, headers=_auth(keys["observer"]))
    assert answer.status_code == 200, answer.text
    body = answer.json
    assert isinstance(body[records], list) and body["disclaimer"]
    for record in body[records]:
        for field, value in record.items():
            if isinstance(value, int):
                assert value >= 0 or field == "net_adds", (field, value)


def test_a_timeseries_lists_every_bucket_zero_filled(release_client, keys) -> None:
    answer = release_client.simulate_get(API + "/keyword-timeseries?keyword=elon%20musk&window=7d&bucket=day",
                                         headers=_auth(keys["observer"]))
    assert len(answer.json["timeseries"]) == 8  # a 7-day window ending at noon touches 8 days


def test_query_in_the_menu_and_outside_it(release_client, keys) -> None:
    headers = {**_auth(keys["analyst"]), "Content-Type": "application/json"}
    inside = release_client.simulate_post(API + "/query", headers=headers,
                                          json={"window": "7d", "group_by": ["platform"]})
    assert inside.status_code == 200
    assert inside.json["group_by"] == ["platform"] and isinstance(inside.json["results"], list)
    for row in inside.json["results"]:
        assert list(row) == ["platform", "suppressions", "unique_users", "events"]
    totals = release_client.simulate_post(API + "/query", headers=headers, json={"window": "30d"})
    assert totals.status_code == 200 and len(totals.json["results"]) == 1
    outside = release_client.simulate_post(API + "/query", headers=headers, json={
        "window": "7d", "group_by": ["keyword"], "filters": {"countries": ["US"]}})
    assert outside.status_code == 422
    assert outside.headers["content-type"].startswith("application/problem+json")
    assert outside.json["type"] == "urn:signals:problem:outside-release"
    assert "keywords" in outside.json["detail"]


def test_no_request_changes_the_release(release_client, keys, released_dir: Path) -> None:
    before = _digest(released_dir)
    for path in ("/top-keywords?window=24h", "/geo-heat?window=7d&level=city", "/trending?window=7d",
                 "/keyword-timeseries?keyword=snakes&window=30d&bucket=week"):
        for _ in range(3):
            assert release_client.simulate_get(API + path, headers=_auth(keys["observer"])).status_code == 200
    assert _digest(released_dir) == before


def test_asking_again_gives_the_same_bytes(release_client, keys) -> None:
    path = API + "/geo-heat?window=30d&level=city"
    first = release_client.simulate_get(path, headers=_auth(keys["observer"]))
    again = release_client.simulate_get(path, headers=_auth(keys["professional"]))
    assert first.status_code == 200 and first.content == again.content


def test_a_past_answer_is_keyed_on_the_release_key(released_dir: Path, fixture_data_dir: Path, tmp_path: Path) -> None:
    """A rebuild under another secret is another answer for every past as_of (its cache key moves)."""
    from service.http.resources.past import past_data_version
    from service.release.engine import ReleaseSource
    from tests.release.conftest import released_copy
    from tests.support.fixture_data import FIXTURE_AS_OF

    other = released_copy(fixture_data_dir, tmp_path / "other", secret="another secret", days=3)
    start = FIXTURE_AS_OF - dt.timedelta(days=1)
    mine = past_data_version(ReleaseSource(released_dir).snapshot(), start, FIXTURE_AS_OF)
    theirs = past_data_version(ReleaseSource(other).snapshot(), start, FIXTURE_AS_OF)
    assert mine > 0 and theirs > 0 and mine != theirs
