"""The webhook management API over HTTP (Falcon test client), on SQLite and on PostgreSQL:
every field rule, the 11th webhook, isolation between subscriptions, the secret shown once, the
signed test delivery to a real receiver, the deliveries list and its pages."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

import falcon.testing
import pytest
from standardwebhooks.webhooks import Webhook

from cache import LocalGate
from service.accounts import AccountStore
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from service.webhooks.webhook_store import WebhookStore
from service.webhooks.worker import Worker
from tests.support.secret import TEST_SECRET
from tests.support.webhook_receiver import Answer, receiver

BASE = "/api/v1/account/webhooks"
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.UTC)


@pytest.fixture
def client(accounts: AccountStore, tmp_path: Path) -> falcon.testing.TestClient:
    settings = Settings(data_dir=tmp_path, secret=TEST_SECRET, webhook_allow_private=True)
    return falcon.testing.TestClient(create_app(settings, accounts=accounts, gate=LocalGate(),
                                                clock=FixedClock(NOW)))


def _headers(accounts: AccountStore, tier: Tier = Tier.OBSERVER) -> dict[str, str]:
    key, _ = accounts.create_key(tier, subscription=f"wh-{uuid.uuid4().hex[:8]}")
    return {"Authorization": f"Bearer {key}"}


def _deliver_queued(accounts: AccountStore) -> int:
    """What the worker process does each second: attempt every delivery that is due."""
    worker = Worker(None, WebhookStore(accounts.db_engine, FixedClock(NOW)), None, clock=FixedClock(NOW),
                    allow_private=True, threads=1)  # one thread: attempted (and so listed) in queue order
    return worker.deliver_due()


def _body(**changes: object) -> dict[str, object]:
    return {"url": "http://127.0.0.1:9999/hook", "window": "24h", "dimension": "keyword", "threshold_pct": 50,
            "cooldown_minutes": 60, **changes}


def test_create_read_list_update_delete(client, accounts):
    h = _headers(accounts)
    created = client.simulate_post(BASE, headers=h, json=_body(description="spikes"))
    assert created.status_code == 201
    hook = created.json
    assert created.headers["location"] == f"{BASE}/{hook['id']}"
    assert hook["secret"].startswith("whsec_")
    assert hook["metric"] == "suppressions" and hook["min_baseline"] == 10 and hook["enabled"] is True
    assert hook["description"] == "spikes"
    got = client.simulate_get(f"{BASE}/{hook['id']}", headers=h)
    assert got.status_code == 200 and "secret" not in got.json  # shown once
    assert {k: v for k, v in hook.items() if k != "secret"} == got.json
    listed = client.simulate_get(BASE, headers=h).json["webhooks"]
    assert [w["id"] for w in listed] == [hook["id"]] and "secret" not in listed[0]
    patched = client.simulate_patch(f"{BASE}/{hook['id']}", headers=h,
                                    json={"threshold_pct": 12.5, "enabled": False, "metric": "unique_users"})
    assert patched.status_code == 200
    assert patched.json["threshold_pct"] == 12.5 and patched.json["enabled"] is False
    assert patched.json["metric"] == "unique_users" and patched.json["window"] == "24h"
    assert client.simulate_delete(f"{BASE}/{hook['id']}", headers=h).status_code == 204
    assert client.simulate_get(f"{BASE}/{hook['id']}", headers=h).status_code == 404
    assert client.simulate_get(BASE, headers=h).json["webhooks"] == []


@pytest.mark.parametrize(("field", "value"), [
    ("window", "1h"), ("window", "90d"), ("dimension", "country"), ("metric", "adds"),
    ("threshold_pct", 0), ("threshold_pct", -5), ("threshold_pct", "50"), ("threshold_pct", True),
    ("cooldown_minutes", 14), ("cooldown_minutes", 1441), ("cooldown_minutes", 30.5),
    ("min_baseline", -1), ("enabled", "yes"), ("description", "x" * 501), ("description", 5),
    ("url", "ftp://example.com/"), ("url", "not a url"), ("url", "http://user:pw@127.0.0.1/"),
    ("colour", "red"), ("window", None),
])
def test_every_bad_field_is_named(client, accounts, field, value):
    h = _headers(accounts)
    response = client.simulate_post(BASE, headers=h, json=_body(**{field: value}))
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert [e["name"] for e in response.json["errors"]] == [field]
    hook = client.simulate_post(BASE, headers=h, json=_body()).json
    patched = client.simulate_patch(f"{BASE}/{hook['id']}", headers=h, json={field: value})
    assert patched.status_code == 400 and [e["name"] for e in patched.json["errors"]] == [field]


@pytest.mark.parametrize("missing", ["url", "window", "dimension", "threshold_pct", "cooldown_minutes"])
def test_required_fields(client, accounts, missing):
    body = _body()
    del body[missing]
    response = client.simulate_post(BASE, headers=_headers(accounts), json=body)
    assert response.status_code == 400 and [e["name"] for e in response.json["errors"]] == [missing]


def test_bounds_accepted(client, accounts):
    h = _headers(accounts)
    for window, dimension, metric, cooldown in [("24h", "keyword", "events", 15), ("7d", "domain", "unique_users", 1440),
                                                ("30d", "platform", "suppressions", 100), ("7d", "page_context", "events", 15)]:
        response = client.simulate_post(BASE, headers=h, json=_body(window=window, dimension=dimension, metric=metric,
                                                                     cooldown_minutes=cooldown, min_baseline=0,
                                                                     threshold_pct=0.01))
        assert response.status_code == 201, response.text


def test_eleventh_webhook_refused(client, accounts):
    h = _headers(accounts)
    for _ in range(10):
        assert client.simulate_post(BASE, headers=h, json=_body()).status_code == 201
    refused = client.simulate_post(BASE, headers=h, json=_body())
    assert refused.status_code == 409
    assert refused.json["type"] == "urn:signals:problem:webhook-limit-reached"
    assert "at most 10" in refused.json["detail"] and refused.json["limit"] == 10
    assert len(client.simulate_get(BASE, headers=h).json["webhooks"]) == 10
    # Another subscription has its own ten.
    assert client.simulate_post(BASE, headers=_headers(accounts), json=_body()).status_code == 201


def test_another_subscriptions_webhook_is_404(client, accounts):
    mine, theirs = _headers(accounts), _headers(accounts, Tier.PROFESSIONAL)
    hook = client.simulate_post(BASE, headers=mine, json=_body()).json
    path = f"{BASE}/{hook['id']}"
    for method, suffix, body in [("GET", "", None), ("PATCH", "", {"enabled": False}), ("DELETE", "", None),
                                 ("POST", "/test", None), ("GET", "/deliveries", None),
                                 ("POST", "/rotate-secret", None)]:
        response = client.simulate_request(method, path + suffix, headers=theirs, json=body)
        assert response.status_code == 404, (method, suffix)
    assert client.simulate_get(BASE, headers=theirs).json["webhooks"] == []
    assert client.simulate_get(path, headers=mine).json["enabled"] is True  # untouched


def test_unauthenticated_is_401(client):
    assert client.simulate_get(BASE).status_code == 401
    assert client.simulate_post(BASE, json=_body()).status_code == 401


def test_ssrf_refused_at_creation_without_the_development_setting(accounts, tmp_path):
    client = falcon.testing.TestClient(create_app(Settings(data_dir=tmp_path, secret=TEST_SECRET), accounts=accounts, gate=LocalGate()))
    h = _headers(accounts)
    for url in ["http://example.com/", "https://127.0.0.1/", "https://10.0.0.1/", "https://169.254.169.254/latest",
                "https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://0x7f000001/", "https://localhost/",
                "https://2130706433/", "https://[64:ff9b::a00:1]/", "https://100.64.0.1/", "https://0.0.0.0/"]:
        response = client.simulate_post(BASE, headers=h, json=_body(url=url))
        assert response.status_code == 400, url
        assert response.json["errors"][0]["name"] == "url"


def test_test_delivery_is_signed_and_listed(client, accounts):
    h = _headers(accounts)
    with receiver(Answer(200)) as rec:
        created = client.simulate_post(BASE, headers=h, json=_body(url=rec.url)).json
        sent = client.simulate_post(f"{BASE}/{created['id']}/test", headers=h)
        assert sent.status_code == 202 and sent.json["attempt"] is None
        assert sent.headers["location"] == f"{BASE}/{created['id']}/deliveries"
        assert rec.received == []  # queued, not sent by the web worker
        assert _deliver_queued(accounts) == 1
        (got,) = rec.wait_for(1)
    payload = json.loads(got.body)
    assert list(payload) == ["source", "event", "webhook_id", "window", "dimension", "threshold_pct", "triggered_at",
                             "alerts"]
    assert payload["event"] == "trending_alert" and payload["webhook_id"] == created["id"]
    assert payload["alerts"] == [] and payload["triggered_at"] == "2026-03-10T12:30:00.000Z"
    # The receiver checks the signature with the standardwebhooks package (the timestamp is the
    # fixed clock's, so allow its distance from now).
    wh = Webhook(created["secret"])
    sig = wh.sign(got.headers["webhook-id"], NOW, got.body.decode())
    assert sig in got.headers["webhook-signature"].split(" ")
    assert got.headers["webhook-id"] == sent.json["delivery_id"]
    listed = client.simulate_get(f"{BASE}/{created['id']}/deliveries", headers=h).json["deliveries"]
    assert [(d["attempt"], d["status_code"], d["outcome"], d["event"]) for d in listed] == [(1, 200, "succeeded", "test")]


def test_rotate_secret_shows_a_new_secret_once(client, accounts):
    h = _headers(accounts)
    created = client.simulate_post(BASE, headers=h, json=_body()).json
    rotated = client.simulate_post(f"{BASE}/{created['id']}/rotate-secret", headers=h)
    assert rotated.status_code == 200
    assert rotated.json["secret"].startswith("whsec_") and rotated.json["secret"] != created["secret"]
    assert "secret" not in client.simulate_get(f"{BASE}/{created['id']}", headers=h).json


def test_deliveries_newest_first_and_paginated(client, accounts):
    h = _headers(accounts)
    with receiver(Answer(200)) as rec:
        hook = client.simulate_post(BASE, headers=h, json=_body(url=rec.url)).json
        ids = [client.simulate_post(f"{BASE}/{hook['id']}/test", headers=h).json["delivery_id"] for _ in range(5)]
        assert _deliver_queued(accounts) == 5
    path = f"{BASE}/{hook['id']}/deliveries"
    first = client.simulate_get(path, headers=h, params={"limit": "2"})
    assert [d["delivery_id"] for d in first.json["deliveries"]] == ids[::-1][:2]
    assert 'rel=next' in first.headers["link"]
    second = client.simulate_get(path, headers=h, params={"limit": "2", "before": str(first.json["next_before"])})
    third = client.simulate_get(path, headers=h, params={"limit": "2", "before": str(second.json["next_before"])})
    assert [d["delivery_id"] for d in second.json["deliveries"] + third.json["deliveries"]] == ids[::-1][2:]
    assert third.json["next_before"] is None
    for params in ({"limit": "0"}, {"limit": "101"}, {"before": "x"}, {"page": "2"}):
        assert client.simulate_get(path, headers=h, params=params).status_code == 400


def test_documented_in_openapi(client):
    document = client.simulate_get("/api/v1/openapi").json
    ops = {(path, method): op for path, methods in document["paths"].items() for method, op in methods.items()}
    for path, method in [(BASE, "get"), (BASE, "post"), (BASE + "/{webhook_id}", "get"),
                         (BASE + "/{webhook_id}", "patch"), (BASE + "/{webhook_id}", "delete"),
                         (BASE + "/{webhook_id}/test", "post"), (BASE + "/{webhook_id}/deliveries", "get"),
                         (BASE + "/{webhook_id}/rotate-secret", "post")]:
        assert "webhooks" in ops[(path, method)]["tags"]
    create = ops[(BASE, "post")]
    schema = create["requestBody"]["content"]["application/json"]["schema"]
    assert schema["properties"]["cooldown_minutes"]["minimum"] == 15
    assert schema["properties"]["cooldown_minutes"]["maximum"] == 1440
    assert schema["properties"]["threshold_pct"]["exclusiveMinimum"] == 0
    assert set(schema["required"]) == {"url", "window", "dimension", "threshold_pct", "cooldown_minutes"}
    assert "409" in create["responses"] and "201" in create["responses"]


@pytest.mark.redis
def test_over_the_real_redis_gate_counts_against_the_rate_limit(rclient, keys, tmp_path):
    """The conftest app on the real Redis (accounts on both backends): management calls go through the
    same gate and carry the subscription's rate-limit headers; a Redis flush would lose no webhook
    or delivery (neither is kept there)."""
    h = {"Authorization": f"Bearer {keys['observer']}"}
    created = rclient.simulate_post(BASE, headers=h, json=_body(url="https://8.8.8.8/hook"))  # a public literal
    assert created.status_code == 201, created.text
    listed = rclient.simulate_get(BASE, headers=h)
    assert listed.status_code == 200 and [w["id"] for w in listed.json["webhooks"]] == [created.json["id"]]
    assert int(listed.headers["x-ratelimit-remaining"]) == int(created.headers["x-ratelimit-remaining"]) - 1
