"""The machine's RabbitMQ for the carrier's tests (service/collector/carrier.py): its URL
(SIGNALS_TEST_AMQP_URL, default the local broker with the guest user), a queue name of each test's
own (removed after it), the queue's depth, and a lander's rounds over the queue in this process."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pika.exceptions

from service.collector import carrier
from service.collector.index import LandedIndex
from service.collector.lander import Round, land_once
from service.store.target import ParquetTarget

URL = os.environ.get("SIGNALS_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")


def unreachable(url: str = URL) -> str | None:
    """Why the broker cannot be used (None when it answers)."""
    try:
        params = pika.URLParameters(url)
        params.socket_timeout = params.stack_timeout = 3
        params.connection_attempts = 1
        pika.BlockingConnection(params).close()
    except (pika.exceptions.AMQPError, OSError) as exc:
        return (f"RabbitMQ does not answer at {carrier.describe(url)} ({type(exc).__name__}); start it with "
                f"`rabbitmq-server -detached`, or set SIGNALS_TEST_AMQP_URL")
    return None


def queue_name() -> str:
    return f"signals-test-{os.getpid()}-{uuid.uuid4().hex[:10]}"


@contextlib.contextmanager
def channel(url: str = URL) -> Iterator:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield connection.channel()
    finally:
        connection.close()


def depth(queue: str, url: str = URL) -> int:
    """Messages in the queue that no consumer holds (ready)."""
    with channel(url) as ch:
        return carrier.declare(ch, queue)


def settled_depth(queue: str, url: str = URL, timeout: float = 60) -> int:
    """The queue's messages once no consumer is attached any more: a consumer that has gone (its
    connection closed, its process killed) has its unacknowledged messages returned by the broker
    as it is removed, which the broker does on its own time; so wait for the removal, then count."""
    deadline = time.monotonic() + timeout
    with channel(url) as ch:
        while True:
            answer = ch.queue_declare(queue=queue, durable=True, arguments=carrier.QUEUE_ARGUMENTS).method
            if answer.consumer_count == 0:
                return int(answer.message_count)
            assert time.monotonic() < deadline, f"{queue} still has {answer.consumer_count} consumers"
            time.sleep(0.05)


def delete(queue: str, url: str = URL) -> None:
    with contextlib.suppress(pika.exceptions.AMQPError, OSError), channel(url) as ch:
        ch.queue_delete(queue=queue)


def land_carried(data_dir: Path, queue: str, *, now, url: str = URL, **options) -> Round:
    """Rounds of the lander over the queue until one consumes nothing and nothing is ready in the
    queue: a Consumer, `land_once`, the acknowledgement (what `python -m service lander` does each
    round); the sum of the rounds."""
    consumer = carrier.Consumer(url, queue, data_dir)
    target = ParquetTarget(data_dir)
    with target.lock():
        target.sweep()
        index = LandedIndex(data_dir).load()
    landed = duplicates = batches = 0
    try:
        consumer.wait(0.3, threading.Event())
        while True:
            done = land_once(data_dir, target, index, now=now, carried=consumer.take(), **options)
            consumer.ack(done.carried)
            landed, duplicates, batches = landed + done.landed, duplicates + done.duplicates, batches + done.batches
            if not done.carried and depth(queue, url) == 0:  # nothing delivered, nothing left to deliver
                break
            consumer.wait(0.3, threading.Event())
    finally:
        consumer.close()
    return Round(batches=batches, landed=landed, duplicates=duplicates)
