"""SignalsClient's webhook methods (the account-management operations) against the real app
in-process: every operation, the secret shown once, a signed test delivery to a real receiver, the
API's field errors as SignalsError, another subscription's id, and no retry of a request that may
have acted."""

from __future__ import annotations

import datetime as dt
import inspect
import json
import uuid

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from cache import LocalGate
from connectors.client import SignalsClient, SignalsError
from connectors.operations import Operations
from service.api.openapi import build_openapi
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from service.webhooks.webhook_store import WebhookStore
from service.webhooks.worker import Worker
from tests.support.api_server import BASE_URL, Recorder
from tests.support.secret import TEST_SECRET
from tests.support.webhook_receiver import Answer, receiver

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.UTC)
METHODS = {"list_webhooks": "webhooks", "create_webhook": "create_webhook", "get_webhook": "webhook",
           "update_webhook": "update_webhook", "delete_webhook": "delete_webhook", "test_webhook": "test_webhook",
           "list_webhook_deliveries": "webhook_deliveries", "rotate_webhook_secret": "rotate_webhook_secret",
           "mint_token": "mint_token"}  # a browser token (issue 51): account management too
FIELDS = dict(window="24h", dimension="keyword", threshold_pct=50, cooldown_minutes=60)


@pytest.fixture
def app(accounts, tmp_path):
    settings = Settings(data_dir=tmp_path, secret=TEST_SECRET, webhook_allow_private=True)
    return create_app(settings, accounts=accounts, gate=LocalGate(), clock=FixedClock(NOW))


@pytest.fixture
def connect(app, accounts):
    made = []

    def make(tier: Tier = Tier.OBSERVER, transport: httpx.BaseTransport | None = None) -> SignalsClient:
        key, _ = accounts.create_key(tier, subscription=f"cw-{uuid.uuid4().hex[:8]}")
        recorder = Recorder(transport or httpx.WSGITransport(app=app))
        client = SignalsClient(BASE_URL, key, transport=recorder, sleep=lambda _s: None)
        client.recorder = recorder
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def test_the_methods_are_the_documents_management_operations():
    management = Operations.from_openapi(build_openapi()).management
    assert set(management) == set(METHODS)
    for method in METHODS.values():
        assert callable(getattr(SignalsClient, method)), method
    # The create method's keyword arguments are the documented body fields, required ones without default.
    schema = management["create_webhook"]
    signature = inspect.signature(SignalsClient.create_webhook).parameters
    assert {p.name for p in schema.params} == set(signature) - {"self"}
    assert {p.name for p in schema.params if p.required} == \
        {n for n, p in signature.items() if n != "self" and p.default is inspect.Parameter.empty}
    assert management["get_webhook"].path_params == ("webhook_id",)
    assert management["list_webhook_deliveries"].records_field == "deliveries"
    assert management["create_webhook"].param("threshold_pct").allowed() == \
        "a number greater than 0 and at most 1000000000"


def test_create_list_read_update_rotate_delete(connect):
    api = connect()
    created = api.create_webhook(url="https://8.8.8.8/hook", **FIELDS, description="spikes")
    assert created["secret"].startswith("whsec_") and created["metric"] == "suppressions"
    listed = api.webhooks()
    assert listed["limit"] == 10 and [w["id"] for w in listed["webhooks"]] == [created["id"]]
    assert "secret" not in listed["webhooks"][0]
    one = api.webhook(created["id"])
    assert one == {k: v for k, v in created.items() if k != "secret"}
    changed = api.update_webhook(created["id"], threshold_pct=75, enabled=False)
    assert changed["threshold_pct"] == 75 and changed["enabled"] is False and changed["window"] == "24h"
    rotated = api.rotate_webhook_secret(created["id"])
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != created["secret"]
    assert api.delete_webhook(created["id"]) is None
    assert api.webhooks()["webhooks"] == []
    with pytest.raises(SignalsError) as gone:
        api.webhook(created["id"])
    assert gone.value.status == 404
    sent = [(r.method, r.url.path) for r in api.recorder.requests if r.url.path != "/api/v1/openapi"]
    assert sent[0] == ("POST", "/api/v1/account/webhooks")
    assert ("DELETE", f"/api/v1/account/webhooks/{created['id']}") in sent


def test_a_test_delivery_is_signed_and_logged(connect, accounts):
    api = connect()
    with receiver(Answer(200)) as rec:
        created = api.create_webhook(url=rec.url, **FIELDS)
        queued = api.test_webhook(created["id"])
        assert queued["attempt"] is None and rec.received == []  # the worker process sends it
        Worker(None, WebhookStore(accounts.db_engine, FixedClock(NOW)), None, clock=FixedClock(NOW),
               allow_private=True).deliver_due()
        (got,) = rec.wait_for(1)
    assert got.headers["webhook-id"] == queued["delivery_id"]
    assert Webhook(created["secret"]).sign(got.headers["webhook-id"], NOW, got.body.decode()) in \
        got.headers["webhook-signature"].split(" ")
    assert json.loads(got.body)["webhook_id"] == created["id"]
    log = api.webhook_deliveries(created["id"], limit=5)
    assert [(d["attempt"], d["status_code"], d["outcome"]) for d in log["deliveries"]] == [(1, 200, "succeeded")]
    assert log["next_before"] is None


def test_the_apis_field_errors_come_back_named(connect):
    api = connect()
    with pytest.raises(SignalsError) as refused:
        api.create_webhook(url="ftp://example.com/", window="2h", dimension="keyword", threshold_pct=0,
                           cooldown_minutes=5)
    error = refused.value
    assert error.status == 400 and error.sent
    assert {e["name"] for e in error.errors} == {"url", "window", "threshold_pct", "cooldown_minutes"}
    with pytest.raises(SignalsError) as unknown:
        api.update_webhook("wh_missing", threshold_pct=10)
    assert unknown.value.status == 404
    with pytest.raises(SignalsError) as no_id:
        api.webhook("")
    assert no_id.value.status == 400 and not no_id.value.sent and no_id.value.errors[0]["name"] == "webhook_id"


def test_another_subscriptions_webhook_is_not_found(connect):
    mine, theirs = connect(), connect(Tier.PROFESSIONAL)
    created = theirs.create_webhook(url="https://8.8.8.8/hook", **FIELDS)
    for call in (lambda: mine.webhook(created["id"]), lambda: mine.delete_webhook(created["id"]),
                 lambda: mine.webhook_deliveries(created["id"])):
        with pytest.raises(SignalsError) as refused:
            call()
        assert refused.value.status == 404
    assert theirs.webhook(created["id"])["id"] == created["id"]


def test_a_path_value_is_one_segment(connect):
    api = connect()
    with pytest.raises(SignalsError) as refused:
        api.webhook("../../signals/top-keywords")
    assert refused.value.status == 404
    assert api.recorder.requests[-1].url.raw_path.decode().endswith("/webhooks/..%2F..%2Fsignals%2Ftop-keywords")


class _DropsAfterSending(httpx.BaseTransport):
    """Passes the document through; every other request reaches the app, and then the connection
    drops before the answer (as when a proxy times out)."""

    def __init__(self, app) -> None:
        self.inner = httpx.WSGITransport(app=app)
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path == "/api/v1/openapi":
            return response
        self.sent += 1
        raise httpx.ReadError("connection dropped", request=request)


def test_a_change_whose_answer_is_lost_is_not_sent_twice(connect, app):
    front = _DropsAfterSending(app)
    api = connect(transport=front)
    with pytest.raises(SignalsError) as lost:
        api.create_webhook(url="https://8.8.8.8/hook", **FIELDS)
    assert lost.value.status is None and front.sent == 1  # the server created it; a retry would duplicate it
    with pytest.raises(SignalsError):
        api.webhooks()  # a read is retried (max_retries + 1 attempts)
    assert front.sent == 1 + 1 + api.max_retries
    with pytest.raises(SignalsError) as lost:
        api.delete_webhook("wh_any")  # a retry would answer 404 for a webhook it had just deleted
    assert lost.value.status is None and front.sent == 1 + 1 + api.max_retries + 1


def test_a_server_mints_a_browser_token_with_the_client(connect):
    api = connect(Tier.ANALYST)
    minted = api.mint_token(["https://app.example.com"], ttl_seconds=120, fixed={"window": "7d"})
    assert minted["expires_at"] == "2026-03-10T12:32:00Z" and minted["fixed"] == {"window": "7d"}
    assert "query" in minted["endpoints"] and minted["token"].startswith("eyJ")
    with pytest.raises(SignalsError) as refused:
        api.mint_token(["https://app.example.com/"])
    assert refused.value.status == 400 and [e["name"] for e in refused.value.errors] == ["origins[0]"]
