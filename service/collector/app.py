"""The collector's Falcon app: `POST /api/v1/events` (docs/collector.md), `GET /healthz`.

The request path, in order: content type (415) -> ingest key (401; a subscription key 403) ->
the key's rate (429) -> the backlog (503; with the RabbitMQ carrier, once the body is checked:
`carrier.Publisher.backlog`) -> the body: its size (413), gzip (400 when broken),
its lines checked by the ingest contract (`events.check_body`) -> duplicates of ids accepted
recently dropped -> the accepted rows appended to the log and fsynced (`log.append`), or, with
SIGNALS_COLLECTOR_LOG=amqp://..., published to RabbitMQ and confirmed (`carrier.Publisher`); 503
when the disk or the broker refuses -> 202 with what became of each line. Every refusal is
problem+json (service/http/errors.py), as everywhere else in the API.

Duplicates: the answer counts the lines whose `event_id` came earlier in the same body or in a
body this process accepted while it ran (the ids of its own recent batches, and those still in
the log when it started), and, with REDIS_URL, in a body any collector process accepted within the
lateness window (service/collector/shared.py). The lander drops every other repeat (a retry that
reaches another collector process without Redis, or comes after a restart once its first copy has
landed), whatever the answer said: an event lands once (service/collector/lander.py).

Rate limits: per ingest key, in this process (`KeyRates`), or with REDIS_URL shared by every
collector process through the API's gate (`shared.SharedRates`).
"""

from __future__ import annotations

import collections
import json
import logging
import math
import threading
import time
import zlib
from pathlib import Path

import falcon
import polars as pl

import cache
from cache import Gate
from service.accounts import AccountStore, AuthFailure, IngestPrincipal
from service.accounts import keys as key_format
from service.clock import Clock, SystemClock
from service.collector import carrier, events, shared
from service.collector import log as event_log
from service.http.errors import Problem, handle_unexpected, serialize_problem
from service.http.middleware.request_id import RequestIdMiddleware
from service.observability import metrics
from service.settings import Settings

log = logging.getLogger("signals.collector")

EVENTS_PATH = "/api/v1/events"
CONTENT_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl")
GZIP_FACTOR = 8  # a gzip body may unpack to this many times SIGNALS_COLLECTOR_MAX_BODY_MB
RECENT_IDS = 2_000_000  # ids of recent batches this process remembers to answer `duplicates`
BACKLOG_CHECK_SECONDS = 0.5


class IngestKeys:
    """Ingest keys looked up in the accounts database, remembered for `ttl` seconds per process."""

    def __init__(self, accounts: AccountStore, ttl: float, clock: Clock) -> None:
        self.accounts, self.ttl, self.clock = accounts, ttl, clock
        self._seen: dict[str, tuple[float, IngestPrincipal | AuthFailure]] = {}
        self._lock = threading.Lock()

    def check(self, presented: str | None) -> IngestPrincipal | AuthFailure:
        if not presented:
            return AuthFailure.MISSING
        now = time.monotonic()
        with self._lock:
            cached = self._seen.get(presented)
        if cached and cached[0] > now:
            return cached[1]
        outcome = self.accounts.authenticate_ingest(presented)
        if self.ttl > 0 and outcome is not AuthFailure.MALFORMED:
            with self._lock:
                if len(self._seen) > 10_000:
                    self._seen.clear()
                self._seen[presented] = (now + self.ttl, outcome)
        return outcome


class KeyRates:
    """Requests per minute per ingest key, in this process: a token bucket per key."""

    def __init__(self, per_minute: int) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._buckets: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key_id: int) -> float:
        """0 when the request may go on; else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, then = self._buckets.get(key_id, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - then) * self.rate)
            if tokens < 1:
                self._buckets[key_id] = (tokens, now)
                return (1 - tokens) / self.rate
            self._buckets[key_id] = (tokens - 1, now)
            return 0.0


class RecentIds:
    """Ids of the batches this process appended (and found in the log at start), the oldest
    forgotten past `limit`."""

    def __init__(self, limit: int = RECENT_IDS) -> None:
        self.limit = limit
        self._ids: set[str] = set()
        self._batches: collections.deque[list[str]] = collections.deque()
        self._lock = threading.Lock()

    def seen(self, ids: list[str]) -> set[str]:
        with self._lock:
            return {i for i in ids if i in self._ids}

    def add(self, ids: list[str]) -> None:
        with self._lock:
            self._ids.update(ids)
            self._batches.append(ids)
            while len(self._ids) > self.limit and len(self._batches) > 1:
                for old in self._batches.popleft():
                    self._ids.discard(old)


class Backlog:
    """Events in the log, read from its file names at most every BACKLOG_CHECK_SECONDS."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._value, self._when = 0, -math.inf
        self._lock = threading.Lock()

    def events(self) -> int:
        now = time.monotonic()
        with self._lock:
            if now - self._when >= BACKLOG_CHECK_SECONDS:
                self._value, _ = event_log.backlog(self.data_dir)
                self._when = now
            return self._value

    def added(self, count: int) -> None:
        with self._lock:
            self._value += count


class EventsResource:
    def __init__(self, settings: Settings, accounts: AccountStore, clock: Clock, gate: Gate | None = None) -> None:
        self.settings = settings
        self.secret = settings.require_secret()  # hashes the user ids: refused at start without SIGNALS_SECRET
        self.clock = clock
        self.keys = IngestKeys(accounts, settings.auth_cache_seconds, clock)
        self.rates: KeyRates | shared.SharedRates = KeyRates(settings.collector_requests_per_minute)
        self.shared_ids: shared.SharedIds | None = None
        if settings.redis_url:
            gate = gate or cache.connect(settings.redis_url, settings.redis_prefix)
            self.rates = shared.SharedRates(gate, settings.collector_requests_per_minute)
            self.shared_ids = shared.SharedIds(settings.redis_url, settings.redis_prefix,
                                               min((settings.late_hours + 1) * 3600, shared.SEEN_SECONDS))
        self.publisher: carrier.Publisher | None = None
        if settings.collector_carried:
            self.publisher = carrier.Publisher(settings.collector_log, settings.collector_queue)
        self.backlog = Backlog(settings.data_dir)
        self.recent = RecentIds()
        self.max_body = settings.collector_max_body_mb << 20
        waiting: list[event_log.Batch | event_log.Held] = [*event_log.batches(settings.data_dir),
                                                           *event_log.held(settings.data_dir)]
        for item in waiting:  # ids accepted but not landed yet
            try:
                frame = (event_log.read(settings.data_dir, item) if isinstance(item, event_log.Batch)
                         else event_log.read_held(settings.data_dir, item))
                self.recent.add(frame.get_column("event_id").to_list())
            except (OSError, pl.exceptions.PolarsError) as exc:  # landed and removed meanwhile, or unreadable
                log.debug("%s not read at start: %s", item.name, exc)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        started = time.perf_counter()
        try:
            self._post(req, resp)
        finally:
            metrics.COLLECTOR_REQUESTS.labels(str(resp.status_code)).inc()
            metrics.COLLECTOR_SECONDS.observe(time.perf_counter() - started)

    def _post(self, req: falcon.Request, resp: falcon.Response) -> None:
        content_type = (req.content_type or "").split(";")[0].strip().lower()
        if content_type not in CONTENT_TYPES:
            raise Problem(415, f"send the events as NDJSON, one event per line, with Content-Type: "
                               f"application/x-ndjson (got {content_type or 'none'!r})")
        encoding = (req.get_header("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            raise Problem(415, f"Content-Encoding {encoding!r} is not supported; send gzip or no encoding")
        principal = self._authenticate(req)
        wait = self.rates.take(principal.key_id)
        if wait:
            raise Problem(429, f"this ingest key may post {self.settings.collector_requests_per_minute} requests "
                               f"per minute; retry after the Retry-After seconds",
                          headers={"Retry-After": str(max(1, math.ceil(wait)))})
        if self.publisher is None:
            self._check_backlog(self.backlog.events())
        body = self._body(req, encoding)
        now = self.clock.now()
        checked = events.check_body(body, now=now, secret=self.secret, late_hours=self.settings.late_hours)
        ids = checked.event_ids().to_list()
        checked.without(self.recent.seen(ids) | self._shared_seen(ids))
        accepted = checked.accepted
        if accepted and self.publisher is not None:  # the queue's depth is in batches: counted with this one
            self._check_backlog(self._queue_backlog(accepted))
        if accepted:
            self._append(event_log.batch_frame(checked.frames))
            kept = checked.event_ids().to_list()
            self.recent.add(kept)
            self._shared_mark(kept)
            self.backlog.added(accepted)
        metrics.COLLECTED.labels("accepted").inc(accepted)
        metrics.COLLECTED.labels("rejected").inc(checked.rejected.height)
        metrics.COLLECTED.labels("duplicate").inc(checked.duplicates)
        resp.status = falcon.HTTP_202
        resp.content_type = "application/json"
        resp.data = json.dumps({"accepted": accepted, "duplicates": checked.duplicates,
                                "rejected": checked.rejected.to_dicts()}).encode()

    def close(self) -> None:
        """The broker's and Redis's connections (a worker's own, made as it served)."""
        if self.publisher is not None:
            self.publisher.close()
        if self.shared_ids is not None:
            self.shared_ids.close()
        if isinstance(self.rates, shared.SharedRates):
            self.rates.gate.close()

    def _append(self, frame: pl.DataFrame) -> None:
        """The batch durable before the 202: fsynced in the log, or confirmed by RabbitMQ."""
        if self.publisher is None:
            try:
                event_log.append(self.settings.data_dir, frame)
            except OSError as exc:
                log.error("could not append %d events to the log in %s: %s", frame.height, self.settings.data_dir,
                          exc)
                raise Problem(503, "the events could not be written to the collector's log; nothing of this "
                                   "request was accepted; retry later", headers={"Retry-After": "5"}) from None
            return
        try:
            self.publisher.publish(event_log.new_batch(frame.height), event_log.frame_bytes(frame))
        except carrier.CarrierError as exc:
            log.error("could not hand %d events to RabbitMQ: %s", frame.height, exc)
            raise Problem(503, "the events could not be handed to the collector's queue; nothing of this request "
                               "was accepted; retry later", headers={"Retry-After": "5"}) from None

    def _check_backlog(self, backlog: int) -> None:
        if backlog >= self.settings.collector_max_backlog:
            raise Problem(503, f"{backlog:,} events are waiting to land (the bound is "
                               f"{self.settings.collector_max_backlog:,}); retry after the Retry-After seconds",
                          headers={"Retry-After": str(max(1, math.ceil(self.settings.lander_interval_seconds)))})

    def _queue_backlog(self, batch: int) -> int:
        assert self.publisher is not None
        try:
            return self.publisher.backlog(batch)
        except carrier.CarrierError as exc:
            log.error("the queue's depth is unknown: %s", exc)
            raise Problem(503, "the collector's queue cannot be reached; nothing of this request was accepted; "
                               "retry later", headers={"Retry-After": "5"}) from None

    def _shared_seen(self, ids: list[str]) -> set[str]:
        if self.shared_ids is None or not self.shared_ids.available or not ids:
            return set()
        try:
            return self.shared_ids.seen(ids)
        except shared.RedisFailure as exc:
            self.shared_ids.failed(exc)
            return set()

    def _shared_mark(self, ids: list[str]) -> None:
        if self.shared_ids is None or not self.shared_ids.available or not ids:
            return
        try:
            self.shared_ids.mark(ids)
        except shared.RedisFailure as exc:  # the batch is kept: only the answers to its repeats suffer
            self.shared_ids.failed(exc)

    def _authenticate(self, req: falcon.Request) -> IngestPrincipal:
        header = req.get_header("Authorization") or ""
        scheme, _, token = header.partition(" ")
        presented = token.strip() if scheme.lower() == "bearer" else ""
        if presented and key_format.looks_like_key(presented):
            raise Problem(403, "a subscription key cannot post events: use an ingest key "
                               "(python -m service keys create --ingest)", title="Not an ingest key")
        outcome = self.keys.check(presented or None)
        if isinstance(outcome, AuthFailure):
            detail = outcome.value.replace("API key", "ingest key")
            raise Problem(401, detail, headers={"WWW-Authenticate": 'Bearer realm="signals-collector"'})
        return outcome

    def _body(self, req: falcon.Request, encoding: str) -> bytes:
        length = req.content_length
        if length is not None and length > self.max_body:
            raise Problem(413, f"the body is {length:,} bytes; at most {self.max_body:,} "
                               f"(SIGNALS_COLLECTOR_MAX_BODY_MB): send fewer events per request")
        raw = req.bounded_stream.read(self.max_body + 1)
        if len(raw) > self.max_body:
            raise Problem(413, f"the body is more than {self.max_body:,} bytes (SIGNALS_COLLECTOR_MAX_BODY_MB): "
                               f"send fewer events per request")
        if encoding == "gzip":
            limit = self.max_body * GZIP_FACTOR
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                body = inflate.decompress(raw, limit + 1)
            except zlib.error as exc:
                raise Problem(400, f"the body is not valid gzip: {exc}") from None
            if len(body) > limit:
                raise Problem(413, f"the body unpacks to more than {limit:,} bytes; send fewer events per request")
            if not inflate.eof:
                raise Problem(400, "the body is not valid gzip: it ends before the gzip stream does")
            raw = body
        if not raw.strip():
            raise Problem(400, "the body is empty: send one JSON event per line")
        return raw


_resources: list[EventsResource] = []  # one per worker; tests make many, and close them (`close_all`)


def close_all() -> None:
    """Close the connections of every collector app of this process (tests; a worker's exit)."""
    while _resources:
        _resources.pop().close()


class HealthResource:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"status": "ok"}


def create_collector_app(settings: Settings | None = None, *, accounts: AccountStore | None = None,
                         clock: Clock | None = None, gate: Gate | None = None) -> falcon.App:
    """The collector's app; `gate`: the Redis gate for the shared rate limits (made from REDIS_URL
    when not given)."""
    settings = settings or Settings.from_env()
    clock = clock or SystemClock()
    accounts = accounts or AccountStore(settings.accounts_url, clock=clock)
    app = falcon.App(middleware=[RequestIdMiddleware()])
    app.req_options.strip_url_path_trailing_slash = True
    app.set_error_serializer(serialize_problem)
    app.add_error_handler(Exception, handle_unexpected)
    resource = EventsResource(settings, accounts, clock, gate)
    _resources.append(resource)
    app.add_route(EVENTS_PATH, resource)
    app.add_route("/healthz", HealthResource())
    return app
