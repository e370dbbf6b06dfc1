"""The RabbitMQ carrier: accepted batches wait for the lander in a RabbitMQ quorum queue instead of
the log directory on this machine's disk (SIGNALS_COLLECTOR_LOG=amqp://...; docs/operations.md,
"Past one machine's disk", says when and why).

- The queue (SIGNALS_COLLECTOR_QUEUE) is a **quorum queue**: durable, replicated by Raft over the
  broker's cluster, each message written to a majority of the nodes' logs and fsynced there
  before the broker confirms it. It is declared, with the same arguments, by every collector and
  by the lander (`declare`): whichever starts first creates it. `x-single-active-consumer`: a
  second lander attached to the queue receives nothing while the first one is connected.
- **The collector** (`Publisher`) publishes one persistent message per accepted batch: the batch's
  rows as Arrow IPC bytes (exactly a batch file's content), its name (`log.new_batch`) as the
  message id, and answers `202` only once the broker has confirmed it (publisher confirms: the
  publish returns when the broker's `basic.ack` arrives; a `basic.nack`, a returned message or a
  broken connection is a `503`). One connection per thread of the worker (a pika connection is
  not thread-safe), made when the thread first publishes.
- **The lander** (`Consumer`) consumes with a prefetch of `PREFETCH` messages, lands what has
  arrived in a round (service/collector/lander.py, `carried`) and acknowledges the consumed
  messages only after the round's generation is published. A lander killed before that has the
  broker deliver them again; the index recognises them (their names, and their events' ids), so
  nothing lands twice.
- **The backlog** (for the `503` past SIGNALS_COLLECTOR_MAX_BACKLOG, and `signals_events_backlog`)
  is the queue's depth in messages, turned into events with the mean size of the batches this
  process has published (and the one at hand) or consumed: the broker counts messages, not what
  is in them. So the collector checks it once a body has been read and checked, not before.

pika's blocking connection has no deadline of its own on a confirm: a broker that has lost its
quorum holds a publish until the quorum is back or the connection breaks (`blocked_connection_timeout`
bounds the wait while the broker blocks publishers for a memory or disk alarm).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pika
import pika.exceptions

from service.collector import log as event_log
from service.collector.lander import Carried

log = logging.getLogger(__name__)

PREFETCH = 1000  # messages (batches) the lander holds unacknowledged at most: a round's carried batches
BLOCKED_SECONDS = 10.0  # a publish waits this long at most while the broker blocks publishers (its alarms)
LANDER_HEARTBEAT_SECONDS = 120  # the lander services it between rounds and while it waits (`Consumer.wait`)
CONNECT_SECONDS = 5.0
BACKLOG_CHECK_SECONDS = 0.5


class CarrierError(Exception):
    """The broker did not take the batch (unreachable, refused, or did not confirm)."""


def parameters(url: str, *, heartbeat: int | None = None) -> pika.URLParameters:
    params = pika.URLParameters(url)
    params.blocked_connection_timeout = BLOCKED_SECONDS
    params.socket_timeout = CONNECT_SECONDS
    params.stack_timeout = CONNECT_SECONDS * 2
    params.connection_attempts = 1
    if heartbeat is not None:
        params.heartbeat = heartbeat
    return params


QUEUE_ARGUMENTS: dict[str, Any] = {"x-queue-type": "quorum", "x-single-active-consumer": True}


def declare(channel: Any, queue: str) -> int:
    """Declare the queue (durable, quorum; the same arguments everywhere); returns its ready messages."""
    return int(channel.queue_declare(queue=queue, durable=True, arguments=QUEUE_ARGUMENTS).method.message_count)


def describe(url: str) -> str:
    """The URL without its password (for logs and errors)."""
    params = pika.URLParameters(url)
    return f"amqp://{params.host}:{params.port}/{params.virtual_host}"


class MeanBatch:
    """The mean events per batch seen by this process: turns a depth in messages into events."""

    def __init__(self) -> None:
        self.events = self.batches = 0
        self._lock = threading.Lock()

    def add(self, events: int) -> None:
        with self._lock:
            self.events += events
            self.batches += 1

    def of(self, messages: int, fallback: float = 1.0, *, also: int | None = None) -> int:
        """`messages` batches in events: times the mean batch (counting `also`, a batch at hand)."""
        with self._lock:
            events, batches = self.events + (also or 0), self.batches + (also is not None)
        return round(messages * (events / batches if batches else fallback))


class Publisher:
    """The collector's side: `publish` returns once the broker has confirmed the batch."""

    def __init__(self, url: str, queue: str) -> None:
        self.url, self.queue = url, queue
        self.mean = MeanBatch()
        self._local = threading.local()
        self._connections: list[pika.BlockingConnection] = []
        self._lock = threading.Lock()
        self._depth, self._when = 0, -float("inf")

    def _channel(self) -> Any:
        channel = getattr(self._local, "channel", None)
        if channel is not None and channel.is_open:
            return channel
        self._drop()
        try:
            connection = pika.BlockingConnection(parameters(self.url, heartbeat=0))
            channel = connection.channel()
            channel.confirm_delivery()
            declare(channel, self.queue)
        except (pika.exceptions.AMQPError, OSError) as exc:
            raise CarrierError(f"RabbitMQ at {describe(self.url)}: {type(exc).__name__} {exc}") from None
        self._local.connection, self._local.channel = connection, channel
        with self._lock:
            self._connections.append(connection)
        return channel

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = self._local.channel = None
        if connection is not None:
            with self._lock:
                if connection in self._connections:
                    self._connections.remove(connection)
            try:
                if connection.is_open:
                    connection.close()
            except (pika.exceptions.AMQPError, OSError):
                pass

    def publish(self, batch: event_log.Batch, body: bytes) -> None:
        """Publish one batch and wait for the broker's confirm. A connection that has broken since
        its last use (a broker restart) is replaced once; if the first attempt did reach the queue,
        the batch is there twice under one name, and lands once (service/collector/lander.py)."""
        properties = pika.BasicProperties(message_id=batch.name, delivery_mode=pika.DeliveryMode.Persistent,
                                          content_type="application/vnd.apache.arrow.stream",
                                          headers={"events": batch.events})
        for attempt in (1, 2):
            try:
                self._channel().basic_publish(exchange="", routing_key=self.queue, body=body,
                                              properties=properties, mandatory=True)
                break
            except (pika.exceptions.UnroutableError, pika.exceptions.NackError) as exc:
                raise CarrierError(f"RabbitMQ refused the batch: {type(exc).__name__}") from None
            except (pika.exceptions.AMQPError, OSError) as exc:
                self._drop()
                if attempt == 2:
                    raise CarrierError(f"RabbitMQ at {describe(self.url)}: {type(exc).__name__} {exc}") from None
        self.mean.add(batch.events)
        with self._lock:
            self._depth += 1

    def backlog(self, batch: int) -> int:
        """Events waiting in the queue: its ready messages (asked at most every BACKLOG_CHECK_SECONDS)
        times the mean of the batches this process published and `batch` (the one at hand: a
        process that has published nothing yet counts the queue in batches like it). Raises
        CarrierError when the broker cannot say."""
        now = time.monotonic()
        with self._lock:
            fresh = now - self._when < BACKLOG_CHECK_SECONDS
            depth = self._depth
        if not fresh:
            try:
                depth = declare(self._channel(), self.queue)
            except (pika.exceptions.AMQPError, OSError) as exc:
                self._drop()
                raise CarrierError(f"RabbitMQ at {describe(self.url)}: {type(exc).__name__} {exc}") from None
            with self._lock:
                self._depth, self._when = depth, now
        return self.mean.of(depth, also=batch)

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            try:
                if connection.is_open:
                    connection.close()
            except (pika.exceptions.AMQPError, OSError):
                pass


class Consumer:
    """The lander's side: deliveries arrive into `pending` (at most PREFETCH unacknowledged); a round
    `take`s them all and `ack`s those it consumed. Any broker failure drops the connection and what
    is pending (the broker delivers it again) and raises; the next call connects again."""

    def __init__(self, url: str, queue: str, data_dir: Path) -> None:
        self.url, self.queue, self.data_dir = url, queue, data_dir
        self.mean = MeanBatch()
        self.pending: collections.OrderedDict[int, Carried] = collections.OrderedDict()
        self._connection: pika.BlockingConnection | None = None
        self._channel: Any = None
        self._ready = 0

    def _connect(self) -> Any:
        if self._channel is not None and self._channel.is_open:
            return self._channel
        self.close()
        connection = pika.BlockingConnection(parameters(self.url, heartbeat=LANDER_HEARTBEAT_SECONDS))
        channel = connection.channel()
        self._ready = declare(channel, self.queue)
        channel.basic_qos(prefetch_count=PREFETCH)
        channel.basic_consume(self.queue, self._delivered, auto_ack=False)
        self._connection, self._channel = connection, channel
        log.info("consuming from the quorum queue %s at %s", self.queue, describe(self.url))
        return channel

    def _delivered(self, _channel: Any, method: Any, properties: Any, body: bytes) -> None:
        name = str(properties.message_id or "")
        batch = event_log.parse_batch(name)
        if batch is None:  # not a collector's batch: kept for the operator as it came, not landed
            aside = event_log.set_aside_bytes(self.data_dir, f"message-{uuid.uuid4().hex}", body)
            log.error("a message without a batch's name (message id %r) came from %s; kept in %s, not landed",
                      name[:100], self.queue, aside)
            _channel.basic_ack(delivery_tag=method.delivery_tag)
            return
        self.pending[method.delivery_tag] = Carried(batch, body, method.delivery_tag)

    def _guard(self, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except (pika.exceptions.AMQPError, OSError):
            self.close()
            raise

    def take(self) -> list[Carried]:
        """What has been delivered and not acknowledged yet (at most PREFETCH batches)."""

        def pump() -> list[Carried]:
            self._connect()
            assert self._connection is not None
            self._connection.process_data_events(time_limit=0)
            return list(self.pending.values())

        return self._guard(pump)

    @property
    def full(self) -> bool:
        """As many batches are pending as the prefetch allows: more are probably waiting."""
        return len(self.pending) >= PREFETCH

    def ack(self, consumed: list[Carried] | tuple[Carried, ...]) -> None:
        def send() -> None:
            for item in consumed:
                if self.pending.pop(item.tag, None) is not None:
                    self.mean.add(item.events)
                    self._channel.basic_ack(delivery_tag=item.tag)
            assert self._connection is not None
            self._connection.process_data_events(time_limit=0)  # sends them now

        if consumed:
            self._guard(send)

    def wait(self, seconds: float, stop: threading.Event) -> None:
        """Wait `seconds` (or until `stop`) servicing the connection: heartbeats, deliveries."""
        deadline = time.monotonic() + seconds
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                self._connect()
                assert self._connection is not None
                self._connection.process_data_events(time_limit=min(left, 0.25))
            except (pika.exceptions.AMQPError, OSError) as exc:
                self.close()
                log.warning("RabbitMQ at %s: %s %s; connecting again", describe(self.url), type(exc).__name__, exc)
                stop.wait(min(max(left, 0), 1.0))

    def backlog(self) -> int:
        """Events waiting: the queue's ready messages (times the mean batch) and those pending here."""
        def depth() -> int:
            self._connect()
            return declare(self._channel, self.queue)

        ready = self._guard(depth)
        return self.mean.of(ready, fallback=self._pending_mean()) + sum(item.events for item in self.pending.values())

    def _pending_mean(self) -> float:
        return (sum(item.events for item in self.pending.values()) / len(self.pending)) if self.pending else 1.0

    def close(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        self.pending.clear()
        if connection is not None:
            try:
                if connection.is_open:
                    connection.close()
            except (pika.exceptions.AMQPError, OSError):
                pass
