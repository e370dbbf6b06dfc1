"""The worker: alerts equal to GET /trending's, signed deliveries verified by a receiver with
standardwebhooks, the cooldown across three worker processes, retries (500 then 200), 410, no
redirects, the timeout, a worker killed mid-queue, SSRF at delivery time. A real HTTP receiver
(tests/support/webhook_receiver.py); the store parts on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import falcon.testing
import pytest
import sqlalchemy as sa
from standardwebhooks.webhooks import Webhook

from cache import LocalGate
from service.accounts import AccountStore
from service.accounts.tables import webhook_deliveries
from service.api.tiers import Tier
from service.app import create_app, privacy_params
from service.clock import FixedClock, SystemClock
from service.engine.polars import PolarsEngine as Engine
from service.privacy import Privacy
from service.settings import Settings
from service.store.reader import EventStore
from service.webhooks import delivery, sender, ssrf
from service.webhooks.webhook_store import WebhookStore
from service.webhooks.worker import Worker
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.processes import ROOT, service_env
from tests.support.secret import TEST_SECRET
from tests.support.webhook_receiver import Answer, receiver

BASE = "/api/v1/account/webhooks"


@pytest.fixture
def sqlite_accounts(tmp_path: Path) -> Iterator[AccountStore]:
    store = AccountStore(f"sqlite:///{(tmp_path / 'accounts.db').as_posix()}")
    yield store
    store.close()


def _api(accounts: AccountStore, data_dir: Path, store: EventStore, clock, engine: Engine):
    settings = Settings(data_dir=data_dir, secret=TEST_SECRET, webhook_allow_private=True)
    client = falcon.testing.TestClient(create_app(settings, accounts=accounts, gate=LocalGate(), clock=clock,
                                                  store=store, engine=engine))
    key, _ = accounts.create_key(Tier.OBSERVER, subscription=f"wk-{uuid.uuid4().hex[:8]}")
    return client, {"Authorization": f"Bearer {key}"}


def _create(client, headers, url: str, **fields) -> dict:
    body = {"url": url, "window": "7d", "dimension": "keyword", "threshold_pct": 100, "cooldown_minutes": 60,
            **fields}
    response = client.simulate_post(BASE, headers=headers, json=body)
    assert response.status_code == 201, response.text
    return response.json


def _deliveries(client, headers, hook_id: str) -> list[dict]:
    return client.simulate_get(f"{BASE}/{hook_id}/deliveries", headers=headers).json["deliveries"]


@pytest.fixture
def exact_setup(accounts, fixture_data_dir, fixture_store):
    """The fixture data with the exact privacy stage (known alerts) and a fixed clock."""
    clock = FixedClock(FIXTURE_NOW)
    engine = Engine(Privacy.exact())
    client, headers = _api(accounts, fixture_data_dir, fixture_store, clock, engine)
    worker = Worker(fixture_store, WebhookStore(accounts.db_engine, clock), engine, clock=clock, allow_private=True)
    return client, headers, worker, clock


# -- alerts ------------------------------------------------------------------------------------


def test_alert_equals_trending_and_verifies(sqlite_accounts, default_demo_dir):
    """Real privacy on the default demo data, the system clock (so the receiver's standardwebhooks
    verify checks the timestamp too): the alert lists exactly /trending's records above the threshold."""
    settings = Settings(data_dir=default_demo_dir, secret=TEST_SECRET)
    engine = Engine(Privacy(settings.secret, privacy_params(settings)))
    store = EventStore(default_demo_dir)
    client, headers = _api(sqlite_accounts, default_demo_dir, store, SystemClock(), engine)
    worker = Worker(store, WebhookStore(sqlite_accounts.db_engine), engine, allow_private=True)
    with receiver(Answer(200)) as rec:
        hooks = [_create(client, headers, rec.url, window=w, dimension=d, metric=m, threshold_pct=t)
                 for w, d, m, t in [("24h", "keyword", "suppressions", 1), ("7d", "domain", "events", 5),
                                    ("30d", "keyword", "unique_users", 1)]]
        worker.run_once()
        got = rec.wait_for(len(hooks), timeout=5)
    by_hook = {}
    for item in got:
        secret = next(h["secret"] for h in hooks if h["id"] == json.loads(item.body)["webhook_id"])
        Webhook(secret).verify(item.body, item.headers)  # raises if the signature or timestamp is wrong
        by_hook[json.loads(item.body)["webhook_id"]] = json.loads(item.body)
    assert by_hook, "no alert at all: the demo data should trend"
    for hook in hooks:
        trending = client.simulate_get("/api/v1/signals/trending", headers=headers, params={
            "window": hook["window"], "dimension": hook["dimension"], "metric": hook["metric"], "limit": "500"}).json
        expected = [r for r in trending["trending"] if r["growth_pct"] > hook["threshold_pct"]]
        if not expected:
            assert hook["id"] not in by_hook
            continue
        alert = by_hook[hook["id"]]
        assert alert["alerts"] == expected
        assert {k: alert[k] for k in ("source", "event", "window", "dimension", "threshold_pct")} == {
            "source": "signals", "event": "trending_alert", "window": hook["window"],
            "dimension": hook["dimension"], "threshold_pct": hook["threshold_pct"]}
        assert len(alert["triggered_at"]) == len("2026-03-10T12:00:00.000Z") and alert["triggered_at"].endswith("Z")


def test_cooldown_one_alert_per_cooldown(exact_setup):
    client, headers, worker, clock = exact_setup
    with receiver(Answer(200)) as rec:
        hook = _create(client, headers, rec.url, cooldown_minutes=15)
        quiet = _create(client, headers, rec.url, threshold_pct=1e8)  # never exceeded
        assert worker.run_once().queued == 1
        assert worker.run_once().queued == 0  # cooling down
        clock.advance(dt.timedelta(minutes=14))
        assert worker.run_once().queued == 0
        clock.advance(dt.timedelta(minutes=1))
        assert worker.run_once().queued == 1
        got = rec.wait_for(2)
    assert [json.loads(g.body)["webhook_id"] for g in got] == [hook["id"], hook["id"]]
    assert _deliveries(client, headers, quiet["id"]) == []


def test_disabled_webhook_is_not_evaluated(exact_setup):
    client, headers, worker, _ = exact_setup
    hook = _create(client, headers, "http://127.0.0.1:9999/", enabled=False)
    assert worker.run_once().queued == 0
    assert _deliveries(client, headers, hook["id"]) == []


# -- delivery ----------------------------------------------------------------------------------


def test_500_then_200_is_retried_with_the_same_id(exact_setup):
    client, headers, worker, clock = exact_setup
    with receiver(Answer(500), Answer(200)) as rec:
        hook = _create(client, headers, rec.url)
        worker.run_once()
        clock.advance(dt.timedelta(seconds=3))
        assert worker.deliver_due() == 0  # not yet: the first retry waits about 5 s
        clock.advance(dt.timedelta(seconds=4))
        assert worker.deliver_due() == 1
        got = rec.wait_for(2)
    assert len(got) == 2 and got[0].headers["webhook-id"] == got[1].headers["webhook-id"]
    assert got[0].body == got[1].body
    listed = _deliveries(client, headers, hook["id"])
    assert [(d["attempt"], d["status_code"], d["outcome"]) for d in listed] == [(2, 200, "succeeded"),
                                                                                 (1, 500, "retrying")]
    assert listed[1]["error"] == "HTTP 500" and listed[1]["duration_ms"] >= 0


def test_gives_up_after_six_attempts(exact_setup):
    client, headers, worker, clock = exact_setup
    with receiver(Answer(503)) as rec:
        hook = _create(client, headers, rec.url)
        worker.run_once()
        for _ in range(8):
            clock.advance(dt.timedelta(hours=6))
            worker.deliver_due()
        assert len(rec.wait_for(6)) == 6
    listed = _deliveries(client, headers, hook["id"])
    assert [d["outcome"] for d in listed] == ["failed"] + ["retrying"] * 5


def test_retry_schedule_has_backoff_and_jitter():
    import random

    rng = random.Random(1)
    bases = [5, 300, 1800, 7200, 18000]
    for made, base in enumerate(bases, start=1):
        delays = {delivery.retry_delay(made, rng).total_seconds() for _ in range(20)}
        assert all(0.8 * base <= d <= 1.2 * base for d in delays) and len(delays) > 1
    assert delivery.retry_delay(6, rng) is None
    assert sender.TIMEOUT_SECONDS == 10


def test_410_disables_the_webhook(exact_setup):
    client, headers, worker, clock = exact_setup
    with receiver(Answer(410)) as rec:
        hook = _create(client, headers, rec.url)
        worker.run_once()
        clock.advance(dt.timedelta(hours=6))
        worker.deliver_due()
        assert len(rec.wait_for(1)) == 1
    shown = client.simulate_get(f"{BASE}/{hook['id']}", headers=headers).json
    assert shown["enabled"] is False and "410" in shown["disabled_reason"]
    assert [(d["status_code"], d["outcome"]) for d in _deliveries(client, headers, hook["id"])] == [(410, "disabled")]
    clock.advance(dt.timedelta(days=2))
    assert worker.run_once().webhooks == 0


def test_redirect_is_not_followed(exact_setup):
    client, headers, worker, _ = exact_setup
    with receiver(Answer(302, headers={"Location": "/elsewhere"}), Answer(200)) as rec:
        hook = _create(client, headers, rec.url)
        worker.run_once()
        time.sleep(0.3)
        assert [r.path for r in rec.received] == ["/hook"]
    (attempt,) = _deliveries(client, headers, hook["id"])
    assert attempt["status_code"] == 302 and attempt["outcome"] == "retrying" and "redirect" in attempt["error"]


def test_slow_receiver_times_out_and_is_logged(exact_setup):
    client, headers, worker, _ = exact_setup
    worker.timeout = 1.0  # the production value is 10 s (test_retry_schedule_has_backoff_and_jitter)
    with receiver(Answer(200, delay=3)) as rec:
        hook = _create(client, headers, rec.url)
        started = time.monotonic()
        worker.run_once()
        assert time.monotonic() - started < 2.5
        rec.wait_for(1)
    (attempt,) = _deliveries(client, headers, hook["id"])
    assert attempt["status_code"] is None and attempt["error"].startswith("timeout") and attempt["outcome"] == "retrying"
    assert 900 <= attempt["duration_ms"] < 2500


def test_ssrf_checked_again_at_delivery(exact_setup, accounts, fixture_store):
    client, headers, worker, clock = exact_setup
    with receiver(Answer(200)) as rec:
        hook = _create(client, headers, rec.url)  # allowed by the development setting at creation
        strict = Worker(fixture_store, worker.webhooks, worker.engine, clock=clock, allow_private=False)
        strict.run_once()
        time.sleep(0.2)
        assert rec.received == []
    (attempt,) = _deliveries(client, headers, hook["id"])
    assert attempt["error"].startswith("refused") and attempt["status_code"] is None


def test_connects_to_the_checked_address_with_the_host_name(exact_setup):
    """A name is resolved once, checked, and the connection goes to that address; Host keeps the name."""
    client, headers, worker, _ = exact_setup
    with receiver(Answer(200)) as rec:
        port = rec.server.server_address[1]
        _create(client, headers, f"http://localhost:{port}/hook")
        worker.run_once()
        (got,) = rec.wait_for(1)
    assert got.headers["host"] == f"localhost:{port}"


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/", "https://10.0.0.1/", "https://169.254.169.254/latest/meta-data/", "https://[::1]/",
    "https://[::ffff:127.0.0.1]/", "https://0x7f000001/", "https://2130706433/", "https://0177.0.0.1/",
    "https://localhost/", "https://[64:ff9b::7f00:1]/", "https://[fe80::1]/", "https://224.0.0.1/",
    "https://0.0.0.0/", "https://[::]/", "https://192.168.1.1/", "https://172.16.0.1/", "https://100.64.0.1/",
    "https://240.0.0.1/", "http://8.8.8.8/",
])
def test_ssrf_table_refused(url):
    with pytest.raises(ssrf.UrlRefused):
        ssrf.check(url, allow_private=False)


@pytest.mark.parametrize(("url", "allow_private", "accepted"), [
    ("https://8.8.8.8/", False, True), ("https://8.8.8.8:443/", False, True), ("https://8.8.8.8:8443/", False, True),
    ("https://8.8.8.8:0/", False, False), ("https://8.8.8.8:22/", False, False), ("https://8.8.8.8:25/", False, False),
    ("https://8.8.8.8:6379/", False, False), ("https://8.8.8.8:80/", False, False),
    ("https://8.8.8.8:65536/", False, False),
    # development: http on 80/8080 anywhere, any port from 1024 on this machine or a private network
    ("http://8.8.8.8/", True, True), ("http://8.8.8.8:8080/", True, True), ("http://8.8.8.8:22/", True, False),
    ("http://8.8.8.8:5000/", True, False), ("http://127.0.0.1:5000/", True, True),
    ("http://10.1.2.3:5000/", True, True), ("http://127.0.0.1:22/", True, False), ("http://127.0.0.1:0/", True, False),
])
def test_only_receiver_ports_are_called(url, allow_private, accepted):
    if accepted:
        assert ssrf.check(url, allow_private=allow_private).addresses
    else:
        with pytest.raises(ssrf.UrlRefused, match="port"):
            ssrf.check(url, allow_private=allow_private)


def test_development_setting_still_refuses_metadata_and_production_refuses_it():
    assert ssrf.check("http://127.0.0.1:8080/", allow_private=True).addresses
    for url in ("http://169.254.169.254/", "http://[fe80::1]/", "http://224.0.0.1/", "http://0.0.0.0/"):
        with pytest.raises(ssrf.UrlRefused):
            ssrf.check(url, allow_private=True)
    from service.settings import SettingsError
    with pytest.raises(SettingsError, match="SIGNALS_WEBHOOK_ALLOW_PRIVATE"):
        Settings.from_env({"SIGNALS_ENV": "production", "SIGNALS_SECRET": "s" * 40,
                           "SIGNALS_WEBHOOK_ALLOW_PRIVATE": "1"})


# -- processes ---------------------------------------------------------------------------------


def _worker_env(data_dir: Path, accounts_url: str) -> dict[str, str]:
    return service_env(data_dir, SIGNALS_ACCOUNTS_URL=accounts_url, SIGNALS_WEBHOOK_ALLOW_PRIVATE="1",
                       SIGNALS_LOG_LEVEL="warning")


@pytest.mark.process
def test_three_worker_processes_one_delivery_per_cooldown(accounts, accounts_url, default_demo_dir):
    settings = Settings(data_dir=default_demo_dir, secret=TEST_SECRET)
    engine = Engine(Privacy(settings.secret, privacy_params(settings)))
    store = EventStore(default_demo_dir)
    client, headers = _api(accounts, default_demo_dir, store, SystemClock(), engine)
    with receiver(Answer(200)) as rec:
        hooks = [_create(client, headers, rec.url, window=w, dimension=d, threshold_pct=1)
                 for w in ("24h", "7d", "30d") for d in ("keyword", "domain")]
        for _ in range(2):  # a second wave finds every cooldown held
            procs = [subprocess.Popen([sys.executable, "-m", "service", "worker", "--once"], cwd=ROOT,
                                      env=_worker_env(default_demo_dir, accounts_url),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
            for proc in procs:
                out, err = proc.communicate(timeout=180)
                assert proc.returncode == 0, err
        time.sleep(0.5)
        got = list(rec.received)
    alerted = [json.loads(g.body)["webhook_id"] for g in got]
    assert alerted, "the demo data should alert"
    assert len(alerted) == len(set(alerted)) <= len(hooks)
    with accounts.db_engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(webhook_deliveries)).scalar_one() == len(alerted)


@pytest.mark.process
def test_worker_killed_mid_queue_loses_nothing(accounts, accounts_url, fixture_data_dir, fixture_store):
    clock = SystemClock()
    store = WebhookStore(accounts.db_engine, clock)
    client, headers = _api(accounts, fixture_data_dir, fixture_store, clock, Engine(Privacy.exact()))
    with receiver(Answer(200, delay=1.5)) as slow:
        hook = _create(client, headers, slow.url)
        now = clock.now()
        ids = [store.enqueue(hook["id"], "test", lambda i: json.dumps({"n": i}), now) for _ in range(30)]
        proc = subprocess.Popen([sys.executable, "-m", "service", "worker"], cwd=ROOT,
                                env=_worker_env(fixture_data_dir, accounts_url),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            slow.wait_for(1, timeout=60)
            time.sleep(0.3)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        in_flight = len(slow.received)
    assert 0 < in_flight < len(ids)
    # Later (past the dead worker's leases) another worker delivers every one of them.
    later = FixedClock(clock.now() + delivery.LEASE + dt.timedelta(seconds=1))
    with receiver(Answer(200)) as fast:
        store.db_engine.dispose()
        client.simulate_patch(f"{BASE}/{hook['id']}", headers=headers, json={"url": fast.url})
        Worker(fixture_store, WebhookStore(accounts.db_engine, later), Engine(Privacy.exact()), clock=later,
               allow_private=True).deliver_due()
        delivered = {g.headers["webhook-id"] for g in fast.received} | {g.headers["webhook-id"] for g in slow.received}
    assert set(ids) <= delivered
    with accounts.db_engine.connect() as c:
        statuses = c.execute(sa.select(webhook_deliveries.c.status)).scalars().all()
    assert statuses == ["succeeded"] * len(ids)


def test_new_data_starts_a_round_before_the_interval(exact_setup, fixture_store):
    import dataclasses
    import threading

    _, _, worker, _ = exact_setup

    class Growing:
        """The fixture store whose data generation moves on when told (new data landed)."""

        def __init__(self) -> None:
            self.bump = 0

        def snapshot(self):
            frames = fixture_store.snapshot()
            return dataclasses.replace(frames, generation=frames.generation + self.bump)

    growing = Growing()
    worker.store = growing
    worker.interval_seconds = 3600
    rounds: list[int] = []
    original = worker.evaluate
    worker.evaluate = lambda: (rounds.append(1), original())[1]
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not rounds and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(rounds) == 1  # the first round at start
        time.sleep(1.5)
        assert len(rounds) == 1  # the interval is an hour
        growing.bump = 1
        deadline = time.monotonic() + 10
        while len(rounds) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(rounds) == 2  # new data: evaluated at once
    finally:
        stop.set()
        thread.join(10)


def test_procfile_runs_the_worker(fixture_data_dir, tmp_path):
    procfile = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if ":" in line)
    command = procfile["worker"].split()
    assert command[:4] == ["python", "-m", "service", "worker"]
    done = subprocess.run([sys.executable, *command[1:], "--once"], cwd=ROOT, capture_output=True, text=True,
                          env=_worker_env(fixture_data_dir, f"sqlite:///{tmp_path / 'accounts.db'}"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "evaluated 0 webhooks" in done.stdout


def test_https_goes_to_the_checked_address_with_the_certificate_name(tmp_path):
    """TLS to the resolved address: SNI and certificate check use the URL's host name, so the
    rewrite to the checked IP keeps https as safe as a normal request (a wrong name fails)."""
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.headers["Host"], getattr(self.connection, "server_hostname", None)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        trust = ssl.create_default_context(cafile=str(cert))
        ok = sender.send(f"https://localhost:{port}/hook", "{}", {}, allow_private=True, verify=trust)
        assert ok.succeeded and ok.status_code == 204, ok.error
        assert seen[0][0] == f"localhost:{port}" and names[-1] == "localhost"
        # The same server reached by a name its certificate does not carry fails verification.
        wrong = sender.send(f"https://127.0.0.1:{port}/hook", "{}", {}, allow_private=True, verify=trust)
        assert not wrong.succeeded and wrong.status_code is None and "CERTIFICATE" in wrong.error.upper()
    finally:
        server.shutdown()
        server.server_close()


def test_deliveries_of_a_disabled_webhook_are_not_sent(exact_setup):
    client, headers, worker, clock = exact_setup
    with receiver(Answer(500)) as rec:
        hook = _create(client, headers, rec.url)
        worker.run_once()
        rec.wait_for(1)
        client.simulate_patch(f"{BASE}/{hook['id']}", headers=headers, json={"enabled": False})
        clock.advance(dt.timedelta(minutes=1))
        worker.deliver_due()
        time.sleep(0.2)
        assert len(rec.received) == 1
    listed = _deliveries(client, headers, hook["id"])
    assert [(d["outcome"], d["error"]) for d in listed][0] == ("failed", "the webhook is disabled")


def test_an_alert_is_charged_to_its_subscriptions_privacy_budget(accounts, tmp_path):
    """An alert shows its subscription /trending's numbers: charged as that answer is (so asking
    /trending after it costs nothing), and not sent when the budget is spent."""
    from service.demo.generate import generate_demo
    from service.privacy.budget import PrivacyBudget

    end = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
    generate_demo(tmp_path, events=40_000, days=40, seed=3, end=end, secret="alerts", progress=False)
    fixture_data_dir, fixture_store = tmp_path, EventStore(tmp_path)
    clock = FixedClock(end + dt.timedelta(minutes=5))
    settings = Settings(data_dir=fixture_data_dir, webhook_allow_private=True, secret="alerts")
    engine = Engine(Privacy(settings.secret, privacy_params(settings)))
    gate = LocalGate()
    client = falcon.testing.TestClient(create_app(settings, accounts=accounts, gate=gate, clock=clock,
                                                  store=fixture_store, engine=engine))
    key, _ = accounts.create_key(Tier.OBSERVER, subscription=f"wk-{uuid.uuid4().hex[:8]}")
    headers = {"Authorization": f"Bearer {key}"}
    hook = _create(client, headers, "http://127.0.0.1:8080/hook", window="30d", dimension="domain",
                   threshold_pct=0.001)
    webhooks = WebhookStore(accounts.db_engine, clock)
    tiny = Worker(fixture_store, webhooks, engine, clock=clock, allow_private=True,
                  budget=PrivacyBudget(gate, 0.001, 0.0))
    report = tiny.evaluate()
    assert (report.refused, report.queued) == (1, 0)
    assert _deliveries(client, headers, hook["id"]) == []
    worker = Worker(fixture_store, webhooks, engine, clock=clock, allow_private=True,
                    budget=PrivacyBudget(gate, settings.privacy_budget, 0.0))
    assert worker.evaluate().queued == 1
    budget = client.simulate_get("/api/v1/account", headers=headers).headers["signals-privacy-budget"]
    spent = dict(part.strip().split("=", 1) for part in budget.split(","))["spent"]
    assert float(spent) > 0
    trending = client.simulate_get("/api/v1/signals/trending", headers=headers,
                                   params={"window": "30d", "dimension": "domain"})
    assert trending.status_code == 200
    shown = dict(part.strip().split("=", 1) for part in trending.headers["signals-privacy-budget"].split(","))
    assert float(shown["charged"]) == 0 and shown["spent"] == spent
