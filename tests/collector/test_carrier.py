"""The RabbitMQ carrier (SIGNALS_COLLECTOR_LOG=amqp://..., service/collector/carrier.py) against the
machine's broker, each test on a queue of its own: posts answered 202 once confirmed, landed once by
the lander's rounds over the queue, re-sent batches counted once, the backlog's 503; and, with
REDIS_URL (service/collector/shared.py), duplicates and rate limits shared by two collector apps.
Killed landers and the Procfile's processes over the carrier: test_carrier_processes.py."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import threading
import uuid

import pika
import polars as pl
import pytest
import redis

from service.collector import carrier
from service.collector import log as event_log
from service.collector.index import LandedIndex
from service.collector.lander import land_once
from service.settings import Settings, SettingsError
from service.store.target import ParquetTarget
from tests.support import rabbitmq
from tests.support.collector_events import (
    HOUR,
    NOW,
    at_hour_start,
    land,
    land_at,
    make_client,
    many,
    ndjson,
    post,
    stored_ids,
)
from tests.support.redis_app import delete_prefix


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


@pytest.fixture
def carried_settings(collector_settings: Settings, queue: str) -> Settings:
    return dataclasses.replace(collector_settings, collector_log=rabbitmq.URL, collector_queue=queue)


def test_a_post_is_one_confirmed_message_named_as_its_batch_and_nothing_on_disk(carried_settings, collector_accounts,
                                                                                ingest_key, data_dir, queue):
    client = make_client(carried_settings, collector_accounts)
    assert post(client, ingest_key, ndjson(many(30))).json == {"accepted": 30, "duplicates": 0, "rejected": []}
    assert event_log.batches(data_dir) == [] and rabbitmq.settled_depth(queue) == 1
    seen: list = []
    with rabbitmq.channel() as ch:
        ch.basic_consume(queue, lambda c, method, properties, body: seen.append((properties, body)), auto_ack=True)
        while not seen:
            ch.connection.process_data_events(time_limit=1)
    [(properties, body)] = seen
    assert properties.delivery_mode == 2 and properties.headers == {"events": 30}
    assert event_log.parse_batch(properties.message_id) == event_log.Batch(properties.message_id, 30)
    frame = pl.read_ipc(io.BytesIO(body))
    assert frame.columns == list(event_log.BATCH_SCHEMA)
    assert sorted(frame["event_id"].to_list()) == sorted(f"e{i}" for i in range(30))


def test_the_queue_is_a_durable_quorum_queue(carried_settings, collector_accounts, ingest_key, queue):
    post(make_client(carried_settings, collector_accounts), ingest_key, ndjson(many(3)))
    with rabbitmq.channel() as ch, pytest.raises(pika.exceptions.ChannelClosedByBroker) as different:
        ch.queue_declare(queue=queue, durable=True, arguments={**carrier.QUEUE_ARGUMENTS, "x-queue-type": "classic"})
    assert different.value.reply_code == 406  # PRECONDITION_FAILED: it exists, as a quorum queue
    assert "quorum" in different.value.reply_text


def test_carried_events_land_once_and_resent_batches_count_once(carried_settings, collector_accounts, ingest_key,
                                                                data_dir, queue):
    first, second = make_client(carried_settings, collector_accounts), make_client(carried_settings,
                                                                                  collector_accounts)
    for start in range(0, 300, 50):
        assert post(first, ingest_key, ndjson(many(50, start=start))).json["accepted"] == 50
    # The same batches again: the same process answers them as duplicates; another process (no
    # Redis here) accepts them, and the lander drops them.
    assert post(first, ingest_key, ndjson(many(50))).json == {"accepted": 0, "duplicates": 50, "rejected": []}
    assert post(second, ingest_key, ndjson(many(100))).json["accepted"] == 100
    landed = rabbitmq.land_carried(data_dir, queue, now=NOW)
    assert (landed.landed, landed.duplicates) == (300, 100)
    assert stored_ids(data_dir)["suppressions"] == 300
    assert rabbitmq.settled_depth(queue) == 0
    assert post(second, ingest_key, ndjson(many(100))).json["duplicates"] == 100  # the ids it accepted
    assert post(first, ingest_key, ndjson(many(10, start=300))).json["accepted"] == 10
    again = rabbitmq.land_carried(data_dir, queue, now=NOW)
    assert (again.landed, again.duplicates) == (10, 0) and stored_ids(data_dir)["suppressions"] == 310


def test_a_redelivered_batch_that_landed_lands_nothing(carried_settings, collector_accounts, ingest_key, data_dir,
                                                       queue):
    """What a lander killed between publishing and acknowledging finds: the same messages again."""
    post(make_client(carried_settings, collector_accounts), ingest_key, ndjson(many(40)))
    consumer = carrier.Consumer(rabbitmq.URL, queue, data_dir)
    try:
        consumer.wait(0.3, threading.Event())
        delivered = consumer.take()
        target = ParquetTarget(data_dir)
        done = land_once(data_dir, target, LandedIndex(data_dir).load(), now=NOW, carried=delivered)
        assert done.landed == 40 and len(done.carried) == 1
    finally:
        consumer.close()  # no acknowledgement: the broker delivers it again
    assert rabbitmq.settled_depth(queue) == 1
    again = rabbitmq.land_carried(data_dir, queue, now=NOW)
    assert (again.landed, again.duplicates, again.batches) == (0, 0, 1)  # recognised by its name
    assert stored_ids(data_dir)["suppressions"] == 40 and rabbitmq.settled_depth(queue) == 0


def test_running_hour_events_carried_are_held_on_the_landers_disk_then_land(carried_settings, collector_accounts,
                                                                             ingest_key, data_dir, queue):
    post(make_client(carried_settings, collector_accounts), ingest_key,
         ndjson([*at_hour_start(20, "run"), *many(10, prefix="past")]))
    first = rabbitmq.land_carried(data_dir, queue, now=NOW)
    assert first.landed == 10 and rabbitmq.settled_depth(queue) == 0
    assert sum(item.events for item in event_log.held(data_dir)) == 20
    land_at(data_dir, HOUR + dt.timedelta(hours=1, seconds=1))
    assert stored_ids(data_dir)["suppressions"] == 30 and event_log.held(data_dir) == []


def test_503_with_retry_after_past_the_backlog_counted_from_the_queue(carried_settings, collector_accounts,
                                                                       ingest_key, data_dir, queue):
    bounded = dataclasses.replace(carried_settings, collector_max_backlog=50)
    client = make_client(bounded, collector_accounts)
    assert post(client, ingest_key, ndjson(many(40))).status_code == 202
    assert post(client, ingest_key, ndjson(many(40, start=40))).status_code == 202  # 40 waiting < 50
    refused = post(client, ingest_key, ndjson(many(40, start=80)))
    assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1
    assert "events are waiting to land" in refused.json["detail"]
    # A collector started now counts the queue's depth (2 messages) in events: still refused.
    assert post(make_client(bounded, collector_accounts), ingest_key, ndjson(many(40, start=80))).status_code == 503
    assert rabbitmq.land_carried(data_dir, queue, now=NOW).landed == 80
    assert post(make_client(bounded, collector_accounts), ingest_key, ndjson(many(40, start=80))).status_code == 202


def test_503_when_the_broker_cannot_be_reached_and_nothing_is_accepted(collector_settings, collector_accounts,
                                                                        ingest_key, data_dir):
    nowhere = dataclasses.replace(collector_settings, collector_log="amqp://guest:guest@127.0.0.1:1/%2F")
    refused = post(make_client(nowhere, collector_accounts), ingest_key, ndjson(many(5)))
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
    assert event_log.batches(data_dir) == []


def test_the_default_is_the_local_disk(collector, ingest_key, data_dir):
    assert Settings().collector_log == "disk" and not Settings().collector_carried
    assert post(collector, ingest_key, ndjson(many(5))).json["accepted"] == 5
    assert len(event_log.batches(data_dir)) == 1 and land(data_dir).landed == 5


def test_the_setting_takes_disk_or_an_amqp_url():
    assert Settings.from_env({"SIGNALS_COLLECTOR_LOG": "amqp://guest:guest@127.0.0.1:5672/%2F"}).collector_carried
    with pytest.raises(SettingsError, match="SIGNALS_COLLECTOR_LOG"):
        Settings.from_env({"SIGNALS_COLLECTOR_LOG": "kafka://broker:9092"})
    with pytest.raises(SettingsError, match="SIGNALS_COLLECTOR_QUEUE"):
        Settings.from_env({"SIGNALS_COLLECTOR_QUEUE": "a queue/with spaces"})


# --- Shared through Redis (REDIS_URL) ----------------------------------------------------------

@pytest.fixture
def shared_settings(collector_settings: Settings, redis_url: str, redis_prefix: str):
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    yield dataclasses.replace(collector_settings, redis_url=redis_url, redis_prefix=prefix)
    delete_prefix(redis_url, prefix)


@pytest.mark.redis
def test_a_repeat_reaching_another_collector_is_answered_as_a_duplicate(shared_settings, collector_accounts,
                                                                         ingest_key, data_dir):
    first, second = make_client(shared_settings, collector_accounts), make_client(shared_settings,
                                                                                  collector_accounts)
    assert post(first, ingest_key, ndjson(many(20))).json["accepted"] == 20
    assert post(second, ingest_key, ndjson(many(30))).json == {"accepted": 10, "duplicates": 20, "rejected": []}
    assert post(first, ingest_key, ndjson(many(30))).json == {"accepted": 0, "duplicates": 30, "rejected": []}
    assert sum(batch.events for batch in event_log.batches(data_dir)) == 30
    assert land(data_dir).landed == 30


@pytest.mark.redis
def test_ids_are_kept_an_hour(shared_settings, collector_accounts, ingest_key, redis_url):
    from service.collector.shared import SEEN_SECONDS

    post(make_client(shared_settings, collector_accounts), ingest_key, ndjson(many(2)))
    client = redis.Redis.from_url(redis_url)
    try:
        ttl = client.ttl(f"{shared_settings.redis_prefix}collector:seen:e0")
    finally:
        client.close()
    assert SEEN_SECONDS == 3600 and SEEN_SECONDS - 60 < ttl <= SEEN_SECONDS


@pytest.mark.redis
def test_a_body_refused_by_the_log_is_not_remembered_as_seen(shared_settings, collector_accounts, ingest_key,
                                                              data_dir, monkeypatch):
    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    client = make_client(shared_settings, collector_accounts)
    monkeypatch.setattr(event_log, "append", full)
    assert post(client, ingest_key, ndjson(many(5))).status_code == 503
    monkeypatch.undo()
    other = make_client(shared_settings, collector_accounts)
    assert post(other, ingest_key, ndjson(many(5))).json["accepted"] == 5  # the retry is kept, not "duplicate"


@pytest.mark.redis
def test_the_rate_limit_is_shared_by_collectors(shared_settings, collector_accounts, ingest_key):
    limited = dataclasses.replace(shared_settings, collector_requests_per_minute=3)
    first, second = make_client(limited, collector_accounts), make_client(limited, collector_accounts)
    answers = [post(client, ingest_key, ndjson(many(1, start=i))).status_code
               for i, client in enumerate([first, second, first, second])]
    assert answers == [202, 202, 202, 429]
    refused = post(first, ingest_key, ndjson(many(1, start=9)))
    assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
    other_key = collector_accounts.create_ingest_key("other")[0]
    assert post(second, other_key, ndjson(many(1, start=20))).status_code == 202  # per key


@pytest.mark.redis
def test_without_redis_answering_each_collector_counts_for_itself(collector_settings, collector_accounts,
                                                                   ingest_key):
    down = dataclasses.replace(collector_settings, redis_url="redis://127.0.0.1:1/0", collector_requests_per_minute=2)
    first, second = make_client(down, collector_accounts), make_client(down, collector_accounts)
    assert post(first, ingest_key, ndjson(many(5))).json["accepted"] == 5
    assert post(first, ingest_key, ndjson(many(5))).json["duplicates"] == 5  # its own ids still
    assert post(second, ingest_key, ndjson(many(5))).json["accepted"] == 5  # the lander drops them
    assert post(first, ingest_key, ndjson(many(1, start=9))).status_code == 429  # per process: 2 per minute
