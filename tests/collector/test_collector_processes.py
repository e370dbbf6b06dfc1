"""The Procfile's `collector` and `lander`, really started (gunicorn; `python -m service lander`):
events sent with the sender land once; the sender's retries on 429 and 503 against the real
collector; and both processes killed with SIGKILL at random moments while events are sent, with
10 % of the acknowledged batches sent again: every event lands exactly once."""

from __future__ import annotations

import datetime as dt
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from connectors.sender import EventSender, SendError
from service.collector import log as event_log
from tests.support.collector_events import suppression
from tests.support.collector_stack import bodies, chaos, count, ingest_key, stack, wait_landed
from tests.support.processes import ROOT, service_env

pytestmark = pytest.mark.process


def _events(count_: int, prefix: str) -> list[dict]:
    return [suppression(f"{prefix}{i}", user_id=f"u{i % 40}") for i in range(count_)]


def test_events_sent_through_the_procfile_collector_land_once(tmp_path):
    data = tmp_path / "data"
    key = ingest_key(data)
    with stack(data) as (base, _collector, lander):
        with EventSender(base, key, batch_size=700) as sender:
            events = _events(2000, "a")
            without_ids = [{k: v for k, v in e.items() if k != "event_id"} for e in _events(300, "b")]
            report = sender.send([*events, *without_ids])
            assert (report.accepted, report.duplicates, report.rejected) == (2300, 0, [])
            again = sender.send(events)  # every acknowledged event sent again
            assert (again.accepted, again.duplicates) == (0, 2000)
            with EventSender(base, "sig_live_" + "A" * 40) as wrong, pytest.raises(SendError) as refused:
                wrong.send(events[:1])
            assert refused.value.status == 403
        assert wait_landed(data, 2300, lander) == {"suppressions": 2300, "keyword_changes": 0}


def test_the_sender_waits_out_429_and_503_from_the_real_collector(tmp_path):
    data = tmp_path / "data"
    key = ingest_key(data)
    # 6 requests per minute: past them, posts wait for their tokens (429, Retry-After); a backlog
    # of 50 events with no lander running yet: the third post is refused (503, Retry-After) until
    # the lander, started once a 503 has been answered, lands what waits.
    with stack(data, lander=False, SIGNALS_COLLECTOR_REQUESTS_PER_MINUTE="6",
               SIGNALS_COLLECTOR_MAX_BACKLOG="50") as (base, collector, lander):
        outcome: dict = {}

        def send() -> None:
            with EventSender(base, key, batch_size=40, backoff=0.1) as sender:
                outcome["report"] = sender.send(_events(280, "r"))

        thread = threading.Thread(target=send)
        thread.start()
        while '"POST /api/v1/events HTTP/1.1" 503' not in collector.log():
            assert thread.is_alive(), outcome
            time.sleep(0.2)
        lander.start()
        thread.join()
        report = outcome["report"]
        assert report.accepted == 280 and report.batches == 7
        assert report.retries >= 2
        assert wait_landed(data, 280, lander)["suppressions"] == 280
        assert '"POST /api/v1/events HTTP/1.1" 429' in collector.log()


def test_killed_at_random_moments_every_event_lands_exactly_once(tmp_path):
    data = tmp_path / "data"
    hour = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)  # ended hours: landed at once
    report = chaos(data, events=30_000, batch=1000, kills=8, seed=5, start=hour - dt.timedelta(hours=2), end=hour)
    assert (report.collector_kills, report.lander_kills) == (4, 4), report
    assert report.counts == {"suppressions": 27_000, "keyword_changes": 3_000}, report
    assert count(data) == report.counts  # and no more come later: the log is empty


def test_bodies_cover_both_tables():
    now = dt.datetime.now(dt.UTC)
    body = next(bodies(20, 20, start=now - dt.timedelta(hours=1), end=now))
    assert body.count(b'"type":"keyword_change"') == 2 and body.count(b"\n") == 20


def test_the_demo_client_of_run_sh_posts_events_that_land(tmp_path):
    data = tmp_path / "data"
    made = subprocess.run(["scripts/demo_ingest_key.sh"], cwd=ROOT, env=service_env(data), capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    key_file = Path(made.stdout.strip())
    assert key_file == data / "demo-ingest-key" and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    again = subprocess.run(["scripts/demo_ingest_key.sh"], cwd=ROOT, env=service_env(data), capture_output=True,
                           text=True, timeout=120)
    assert again.stdout.strip() == str(key_file) and "earlier run" in again.stderr  # kept, not a second key
    with stack(data) as (base, _collector, lander):
        demo = subprocess.Popen([sys.executable, "-m", "connectors.sender", "demo", "--url", base, "--key-file",
                                 str(key_file), "--rate", "50"], cwd=ROOT, env=service_env(data),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            while not event_log.batches(data) and demo.poll() is None:
                time.sleep(0.2)
        finally:
            demo.terminate()
            output = demo.communicate(timeout=30)[0]
        assert demo.returncode == 0, output
        # Events of the running hour: the lander holds them until the hour ends (or lands them,
        # if it has just ended): every accepted one is in one of the two places.
        deadline = time.monotonic() + 120
        while event_log.batches(data) and time.monotonic() < deadline:
            time.sleep(0.2)
        held = sum(item.events for item in event_log.held(data))
        landed = sum(count(data).values())
        assert lander.process is not None and lander.process.poll() is None
    assert held + landed >= 50, output
