"""The RabbitMQ carrier with real processes: a landing round over the queue killed at each stage
(tests/support/crashing_carried_lander.py) and the broker delivering its messages again; the
Procfile's `collector` and `lander` with SIGNALS_COLLECTOR_LOG=amqp://... (events sent with the
sender land once, `data count` exact); and both killed with SIGKILL at random moments while
events are sent, 10 % of the acknowledged batches sent again: every event lands exactly once."""

from __future__ import annotations

import dataclasses
import datetime as dt
import subprocess
import sys

import pytest

from connectors.sender import EventSender
from service.collector import log as event_log
from service.store import layout
from tests.support import rabbitmq
from tests.support.collector_events import NOW, make_client, many, ndjson, post, stored_ids, suppression
from tests.support.collector_stack import chaos, count, ingest_key, stack, wait_landed
from tests.support.crashing_carried_lander import KILLED
from tests.support.processes import ROOT

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def broker() -> str:
    reason = rabbitmq.unreachable()
    if reason:
        pytest.skip(reason)
    return rabbitmq.URL


@pytest.fixture
def queue(broker):
    name = rabbitmq.queue_name()
    yield name
    rabbitmq.delete(name)


@pytest.mark.parametrize("stage", ["staging", "renaming", "publishing", "published", "acking"])
def test_a_lander_killed_mid_landing_has_the_broker_deliver_again_and_every_event_lands_once(
        collector_settings, collector_accounts, ingest_key, data_dir, queue, stage):
    settings = dataclasses.replace(collector_settings, collector_log=rabbitmq.URL, collector_queue=queue)
    first, second = make_client(settings, collector_accounts), make_client(settings, collector_accounts)
    assert post(first, ingest_key, ndjson(many(40))).json["accepted"] == 40
    assert post(second, ingest_key, ndjson(many(40, start=20))).json["accepted"] == 40  # 20 repeat the first's
    killed = subprocess.run([sys.executable, "-m", "tests.support.crashing_carried_lander", str(data_dir),
                             rabbitmq.URL, queue, stage], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert killed.returncode == KILLED, killed.stderr
    published = layout.read_generation(data_dir)
    assert published in (0, 1)
    assert stored_ids(data_dir)["suppressions"] == (60 if published else 0)  # all of the round or none
    assert rabbitmq.settled_depth(queue) == 2  # nothing was acknowledged: both messages are delivered again
    again = rabbitmq.land_carried(data_dir, queue, now=NOW)
    assert again.landed == (0 if published else 60) and again.batches == 2
    assert stored_ids(data_dir)["suppressions"] == 60 and rabbitmq.settled_depth(queue) == 0
    assert rabbitmq.land_carried(data_dir, queue, now=NOW).landed == 0
    assert post(make_client(settings, collector_accounts), ingest_key, ndjson(many(60))).json["accepted"] == 60
    assert rabbitmq.land_carried(data_dir, queue, now=NOW).duplicates == 60  # everything again: dropped
    assert stored_ids(data_dir)["suppressions"] == 60


def test_events_sent_through_the_procfile_collector_over_rabbitmq_land_once(tmp_path, queue):
    data = tmp_path / "data"
    key = ingest_key(data)
    env = {"SIGNALS_COLLECTOR_LOG": rabbitmq.URL, "SIGNALS_COLLECTOR_QUEUE": queue}
    events = [suppression(f"a{i}", user_id=f"u{i % 40}") for i in range(2000)]
    with stack(data, **env) as (base, _collector, lander):
        with EventSender(base, key, batch_size=700) as sender:
            report = sender.send(events)
            assert (report.accepted, report.duplicates, report.rejected) == (2000, 0, [])
            again = sender.send(events)  # every acknowledged event sent again
            assert (again.accepted, again.duplicates) == (0, 2000)
        assert event_log.batches(data) == []  # nothing on the collector's disk
        assert wait_landed(data, 2000, lander, queue=queue) == {"suppressions": 2000, "keyword_changes": 0}
    assert rabbitmq.settled_depth(queue) == 0 and count(data) == {"suppressions": 2000, "keyword_changes": 0}


def test_killed_at_random_moments_over_rabbitmq_every_event_lands_exactly_once(tmp_path, queue):
    data = tmp_path / "data"
    hour = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)  # ended hours: landed at once
    report = chaos(data, events=30_000, batch=1000, kills=8, seed=5, start=hour - dt.timedelta(hours=2), end=hour,
                   SIGNALS_COLLECTOR_LOG=rabbitmq.URL, SIGNALS_COLLECTOR_QUEUE=queue)
    assert (report.collector_kills, report.lander_kills) == (4, 4), report
    assert report.counts == {"suppressions": 27_000, "keyword_changes": 3_000}, report
    # The processes have stopped: a message still unacknowledged would be ready again now.
    assert rabbitmq.settled_depth(queue) == 0
    assert count(data) == report.counts
