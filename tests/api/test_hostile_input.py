"""Bad input that once reached a 500 or was quietly misread (issue 21): numbers of any size in
every body field, digits of other scripts, query strings that are not UTF-8, and the `Allow`
header asked two ways. Every one is a 4xx problem naming what was wrong."""

from __future__ import annotations

import json
import uuid

import falcon.testing
import pytest

from cache import LocalGate
from service.api.endpoints import BY_NAME, ENDPOINTS
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.http import assert_problem, get
from tests.support.secret import TEST_SECRET
from tests.support.spec_table import BASE

BIG = "9" * 310     # past a float: float(int) overflowed (OverflowError -> 500)
HUGE = "9" * 5000   # past Python's int conversion limit (ValueError inside json.loads -> 500)
QUERY_FIELDS = [p.name for p in BY_NAME["query"].params]
WEBHOOK_BASE = "/api/v1/account/webhooks"
WEBHOOK_BODY = {"url": "http://127.0.0.1:9999/hook", "window": "24h", "dimension": "keyword",
                "threshold_pct": 50, "cooldown_minutes": 60}


def _raw_post(client, key: str, path: str, raw: str):
    return client.simulate_post(path, body=raw.encode(), headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json"})


def _names(result) -> list[str]:
    return [e["name"] for e in result.json.get("errors", [])]


@pytest.mark.parametrize("digits", [BIG, HUGE, "-" + BIG, "-" + HUGE], ids=["310", "5000", "-310", "-5000"])
@pytest.mark.parametrize("field", QUERY_FIELDS)
def test_any_number_in_any_query_field_is_400_naming_it(client, keys, field, digits):
    body = {"window": "24h", field: None}
    raw = json.dumps(body).replace("null", digits)
    if field == "filters":  # inside the object too
        raw = json.dumps({"window": "24h", "filters": {"keywords": [None]}}).replace("null", digits)
    result = _raw_post(client, keys["professional"], BASE + "/query", raw)
    assert_problem(result, 400)
    assert any(name == field or name.startswith(field + ".") for name in _names(result)), result.json
    reason = next(e["reason"] for e in result.json["errors"] if e["name"].startswith(field))
    assert len(reason) < 300, reason  # the number cut short in the message, never 5000 digits
    if field == "limit":
        assert "out of bounds" in reason and "digits)" in reason, reason


@pytest.mark.parametrize("number", ["1e400", "-1e400", "2.5E+309", "1e99999"])
def test_a_number_beyond_a_float_is_echoed_as_sent(client, keys, number):
    """`"limit": 1e400` reads as inf in Python: the 400 must say what was sent, not 'inf' (issue 42)."""
    result = _raw_post(client, keys["professional"], BASE + "/query", '{"window": "24h", "limit": ' + number + '}')
    reason = assert_problem(result, 400, "limit")["errors"][0]["reason"]
    assert reason.startswith(f"{number} is out of bounds; expected") and "inf" not in reason, reason
    assert number in result.json["detail"]
    query = get(client, "/trending", keys["professional"], {"min_baseline": number})
    reason = assert_problem(query, 400, "min_baseline")["errors"][0]["reason"]
    assert reason.startswith(f"{number} is out of bounds") and "inf" not in reason, reason


@pytest.fixture
def webhooks_client(accounts, tmp_path) -> falcon.testing.TestClient:
    settings = Settings(data_dir=tmp_path, secret=TEST_SECRET, webhook_allow_private=True)
    return falcon.testing.TestClient(create_app(settings, accounts=accounts, gate=LocalGate(),
                                                clock=FixedClock(FIXTURE_NOW)))


@pytest.mark.parametrize("digits", [BIG, HUGE, "-" + HUGE, BIG + ".5", "1e400"])
@pytest.mark.parametrize("field", ["threshold_pct", "cooldown_minutes", "min_baseline"])
def test_any_number_in_a_webhook_field_is_400_naming_it(webhooks_client, accounts, field, digits):
    key, _ = accounts.create_key(Tier.OBSERVER, subscription=f"hostile-{uuid.uuid4().hex[:8]}")
    raw = json.dumps({**WEBHOOK_BODY, field: None}).replace("null", digits)
    created = _raw_post(webhooks_client, key, WEBHOOK_BASE, raw)
    assert_problem(created, 400)
    assert _names(created) == [field]
    hook = webhooks_client.simulate_post(WEBHOOK_BASE, json=WEBHOOK_BODY, headers={"Authorization": f"Bearer {key}"})
    assert hook.status_code == 201
    patched = webhooks_client.simulate_patch(f"{WEBHOOK_BASE}/{hook.json['id']}", body=json.dumps(
        {field: None}).replace("null", digits).encode(), headers={"Authorization": f"Bearer {key}",
                                                                  "Content-Type": "application/json"})
    assert_problem(patched, 400)
    assert _names(patched) == [field]


@pytest.mark.parametrize("value", ["１", "١", "५", "1_0", "٣٠", "nan", "inf"])
def test_query_string_numbers_are_ascii_digits_only(client, keys, value):
    result = get(client, "/top-keywords", keys["observer"], {"limit": value})
    assert_problem(result, 400)
    assert _names(result) == ["limit"]
    trending = get(client, "/trending", keys["observer"], {"min_baseline": value})
    assert_problem(trending, 400)
    assert _names(trending) == ["min_baseline"]


@pytest.mark.parametrize(("query", "names"), [
    ("keyword=%FF", ["keyword"]), ("keyword=caf%C3", ["keyword"]), ("keyword=%C3%A9%80", ["keyword"]),
    ("%FFname=1", ["\ufffdname"]), ("keyword=ok&domain=%E2%82", ["domain"]),
])
def test_a_query_string_that_is_not_utf8_is_400_naming_the_parameter(client, keys, query, names):
    result = client.simulate_get(BASE + "/keyword-timeseries", query_string=query,
                                 headers={"Authorization": f"Bearer {keys['observer']}"})
    assert_problem(result, 400)
    assert _names(result) == names


def test_utf8_query_values_are_still_read(client, keys):
    result = client.simulate_get(BASE + "/keyword-timeseries", query_string="keyword=caf%C3%A9",
                                 headers={"Authorization": f"Bearer {keys['observer']}"})
    assert result.status_code == 200 and result.json["keyword"] == "café"


@pytest.mark.parametrize("path", [e.full_path for e in ENDPOINTS] + ["/api/v1/openapi", "/healthz",
                                                                     "/api/v1/account", WEBHOOK_BASE])
def test_options_and_405_name_the_same_methods(client, keys, path):
    headers = {"Authorization": f"Bearer {keys['professional']}"}
    options = client.simulate_options(path, headers=headers)
    assert options.status_code == 200
    for method in ("HEAD", "PUT", "DELETE"):
        refused = client.simulate_request(method, path, headers=headers)
        if refused.status_code == 405:
            assert set(refused.headers["allow"].split(", ")) == set(options.headers["allow"].split(", ")), method
    assert "OPTIONS" in options.headers["allow"].split(", ")


@pytest.mark.parametrize(("logged", "shown"), [
    ("GET /api/v1/signals/top-keywords?api_key=sig_live_AbC123&limit=3 HTTP/1.1",
     "GET /api/v1/signals/top-keywords?api_key=[redacted]&limit=3 HTTP/1.1"),
    ("/x?limit=3&ApiKey=abc", "/x?limit=3&ApiKey=[redacted]"), ("/x?token=t0k&access_token=a", "/x?token=[redacted]&access_token=[redacted]"),
    ("/x?keyword=sig_test_Zz9", "/x?keyword=[redacted]"), ("/x?monkey=1&limit=2", "/x?monkey=1&limit=2"),
    ("-", "-"),
])
def test_the_access_log_redacts_keys_in_urls(logged, shown):
    from service.server.gunicorn_logging import redact

    assert redact(logged) == shown


def test_webhook_fields_take_what_their_schema_allows(webhooks_client, accounts):
    """Found by the fuzz run: an integral float for an integer field, and text with characters that
    are not printable but are not control characters either, are what the document allows."""
    key, _ = accounts.create_key(Tier.OBSERVER, subscription=f"hostile-{uuid.uuid4().hex[:8]}")
    headers = {"Authorization": f"Bearer {key}"}
    created = webhooks_client.simulate_post(WEBHOOK_BASE, headers=headers, json={
        **WEBHOOK_BODY, "cooldown_minutes": 356.0, "description": "\u00ddvYs\U000615d9 \u200b"})
    assert created.status_code == 201, created.text
    assert created.json["cooldown_minutes"] == 356 and isinstance(created.json["cooldown_minutes"], int)
    for description in ("bell\x07", "line\nbreak", "c1\x85", "lone \ud800"):
        refused = webhooks_client.simulate_patch(  # json.dumps escapes the lone surrogate as \ud800
            f"{WEBHOOK_BASE}/{created.json['id']}", body=json.dumps({"description": description}),
            headers={**headers, "Content-Type": "application/json"})
        assert_problem(refused, 400)
        assert _names(refused) == ["description"]
    for cooldown in (356.5, "60", True):
        refused = webhooks_client.simulate_patch(f"{WEBHOOK_BASE}/{created.json['id']}", headers=headers,
                                                 json={"cooldown_minutes": cooldown})
        assert _names(refused) == ["cooldown_minutes"]


def test_deliveries_before_is_bounded_by_what_the_database_holds(webhooks_client, accounts):
    key, _ = accounts.create_key(Tier.OBSERVER, subscription=f"hostile-{uuid.uuid4().hex[:8]}")
    headers = {"Authorization": f"Bearer {key}"}
    hook = webhooks_client.simulate_post(WEBHOOK_BASE, headers=headers, json=WEBHOOK_BODY).json
    path = f"{WEBHOOK_BASE}/{hook['id']}/deliveries"
    assert webhooks_client.simulate_get(path, headers=headers, params={"before": str(2**63 - 1)}).status_code == 200
    for before in (str(2**63), "9" * 40, "-1", "١"):
        refused = webhooks_client.simulate_get(path, headers=headers, params={"before": before})
        assert_problem(refused, 400)
        assert _names(refused) == ["before"]
