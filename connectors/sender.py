"""`EventSender`: posts events to the Signals collector (`POST /api/v1/events`, docs/collector.md).

    from connectors.sender import EventSender

    with EventSender("http://127.0.0.1:8002", ingest_key) as sender:
        report = sender.send(events)          # any iterable of dicts; batches of `batch_size`
        report.accepted, report.duplicates, report.rejected

What it does for the caller:

- ids: an event without an `event_id` gets one (a random UUID) before its first attempt, so every
  retry carries the same id and the collector lands the event once however often it is sent;
- batches of `batch_size` events (at most 10,000 by default), NDJSON, gzip-compressed;
- retries: a 429 or 503 waits the answer's `Retry-After` (or an exponential backoff with jitter
  when there is none) and tries again, while the waits stay under `max_wait` seconds in all;
  connection failures and timeouts are retried too, even when the request may have arrived:
  posting events is idempotent by their ids (a repeat is answered as a duplicate, or dropped by
  the lander);
- any other refusal (400, 401, 403, 413, 415) raises `SendError` with the problem+json body.

Retries use tenacity, as the API client (connectors/client.py) does, with an injectable sleep.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx
import tenacity

EVENTS_PATH = "/api/v1/events"
BATCH_SIZE = 5_000
_TRANSPORT = (httpx.TransportError,)  # connect, read, write failures and timeouts


class SendError(Exception):
    """The collector refused a batch (not a retryable answer), or retries ran out."""

    def __init__(self, status: int | None, problem: dict[str, Any] | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.problem = problem or {}


@dataclasses.dataclass
class SendReport:
    batches: int = 0
    accepted: int = 0
    duplicates: int = 0
    rejected: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # {"line", "reason", "batch"}
    retries: int = 0

    def add(self, answer: dict[str, Any], batch: int) -> None:
        self.batches += 1
        self.accepted += answer["accepted"]
        self.duplicates += answer["duplicates"]
        self.rejected.extend({**item, "batch": batch} for item in answer["rejected"])


class _Transient(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response
        value = response.headers.get("retry-after", "").strip()
        self.retry_after = float(value) if value.isdigit() else None


def with_ids(events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The events, each with an `event_id` (a new random one where it had none)."""
    for event in events:
        yield event if event.get("event_id") else {**event, "event_id": uuid.uuid4().hex}


def encode(events: Iterable[dict[str, Any]]) -> bytes:
    """NDJSON: one event per line."""
    return "".join(json.dumps(event, separators=(",", ":")) + "\n" for event in events).encode("utf-8")


class EventSender:
    def __init__(self, base_url: str = "http://127.0.0.1:8002", key: str = "", *, batch_size: int = BATCH_SIZE,
                 compress: bool = True, timeout: float = 60.0, max_wait: float = 300.0, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep, transport: httpx.BaseTransport | None = None) -> None:
        if not 1 <= batch_size <= 100_000:
            raise ValueError("batch_size must be between 1 and 100000")
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        self.compress = compress
        self.max_wait = max_wait
        self._sleep = sleep
        self._backoff = tenacity.wait_exponential_jitter(multiplier=backoff, max=10.0, jitter=backoff)
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport,
                                  headers={"Authorization": f"Bearer {key}", "User-Agent": "signals-sender/1"})
        self.retries = 0

    def send(self, events: Iterable[dict[str, Any]]) -> SendReport:
        """Post every event, in batches; what the collector made of them."""
        report = SendReport()
        batch: list[dict[str, Any]] = []
        for event in with_ids(events):
            batch.append(event)
            if len(batch) >= self.batch_size:
                report.add(self.post(batch), report.batches)
                batch = []
        if batch:
            report.add(self.post(batch), report.batches)
        report.retries = self.retries
        return report

    def post(self, batch: list[dict[str, Any]]) -> dict[str, Any]:
        """One batch (ids added where absent), retried as the module docstring says; the 202's body."""
        return self.post_body(encode(with_ids(batch)))

    def post_body(self, ndjson: bytes, *, gzipped: bool = False) -> dict[str, Any]:
        """An already encoded NDJSON body whose events carry their ids (the bench's); `gzipped`: it
        is compressed already (sent as it is)."""
        content = ndjson if gzipped or not self.compress else gzip.compress(ndjson, compresslevel=1)
        headers = {"Content-Type": "application/x-ndjson"}
        if gzipped or self.compress:
            headers["Content-Encoding"] = "gzip"

        def attempt() -> httpx.Response:
            response = self._http.post(EVENTS_PATH, content=content, headers=headers)
            if response.status_code in (429, 503):
                raise _Transient(response)
            return response

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type((_Transient, *_TRANSPORT)),
                                     wait=self._wait, stop=self._stop, sleep=self._sleep, reraise=True,
                                     before_sleep=self._count)
        try:
            response = retrying(attempt)
        except _Transient as exc:
            raise _refusal(exc.response, "gave up after retries: ") from None
        except httpx.TransportError as exc:
            raise SendError(None, None, f"cannot reach the collector at {self.base_url}: "
                                        f"{type(exc).__name__}: {exc}") from exc
        if response.status_code != 202:
            raise _refusal(response)
        return response.json()

    def _count(self, state: tenacity.RetryCallState) -> None:
        self.retries += 1

    def _wait(self, state: tenacity.RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, _Transient) and failure.retry_after is not None:
            return failure.retry_after
        return self._backoff(state)

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        return state.idle_for + (state.upcoming_sleep or 0) > self.max_wait or state.attempt_number >= 1000

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EventSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _refusal(response: httpx.Response, prefix: str = "") -> SendError:
    try:
        problem = response.json()
    except ValueError:
        problem = None
    detail = problem.get("detail") if isinstance(problem, dict) else response.text[:200]
    return SendError(response.status_code, problem if isinstance(problem, dict) else None,
                     f"{prefix}the collector answered {response.status_code}: {detail}")


# -- `python -m connectors.sender demo`: a trickle of plausible events, for the demo -------------

_DEMO_KEYWORDS = ("crypto", "election", "spoilers", "diet ads", "celebrity gossip", "sports betting", "true crime",
                  "politics", "horoscope", "clickbait", "giveaway", "ai art", "layoffs", "weather", "recipes")
_DEMO_DOMAINS = ("reddit.com", "youtube.com", "x.com", "facebook.com", "nytimes.com", "bbc.co.uk", "tiktok.com")
_DEMO_PLATFORMS = ("chrome", "firefox", "safari", "edge", "ios", "android")
_DEMO_CONTEXTS = ("feed", "search", "comments", "article", "video")
_DEMO_PLACES = (("US", "US-CA", "06037"), ("US", "US-NY", None), ("DE", None, None), ("GB", None, None),
                ("FR", None, None), ("BR", None, None), ("IN", None, None))


def demo_events(count: int, now: float, rng: Any) -> list[dict[str, Any]]:
    """`count` events of the last few seconds: suppressions and, one in ten, keyword changes."""
    import datetime as dt

    events = []
    for _ in range(count):
        moment = dt.datetime.fromtimestamp(now - rng.uniform(0, 5), dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        user, keyword, platform = f"demo-user-{rng.randrange(5000)}", rng.choice(_DEMO_KEYWORDS), rng.choice(
            _DEMO_PLATFORMS)
        country, region, county = rng.choice(_DEMO_PLACES)
        if rng.random() < 0.1:
            events.append({"type": "keyword_change", "ts": moment, "user_id": user, "keyword": keyword,
                           "action": rng.choice(("add", "add", "remove")), "platform": platform, "country": country})
        else:
            events.append({"type": "suppression", "ts": moment, "user_id": user, "keyword": keyword,
                           "domain": rng.choice(_DEMO_DOMAINS), "platform": platform,
                           "page_context": rng.choice(_DEMO_CONTEXTS), "country": country, "region": region,
                           "county": county, "suppressions": rng.choice((1, 1, 1, 2, 3))})
    return events


def main(argv: list[str] | None = None) -> int:
    import argparse
    import random
    import signal
    import sys
    import threading

    parser = argparse.ArgumentParser(prog="python -m connectors.sender",
                                     description="Post events to the Signals collector.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="post plausible demo events at a modest rate until stopped")
    demo.add_argument("--url", default="http://127.0.0.1:8002", help="the collector (default %(default)s)")
    demo.add_argument("--key-file", required=True, help="a file whose first line is an ingest key")
    demo.add_argument("--rate", type=int, default=20, help="events per second (default %(default)s)")
    args = parser.parse_args(argv)
    with open(args.key_file) as handle:
        key = handle.readline().strip()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    rng = random.Random()
    print(f"posting about {args.rate} demo events per second to {args.url}", flush=True)
    with EventSender(args.url, key, max_wait=60) as sender:
        sent = 0
        while not stop.wait(1.0):
            try:
                answer = sender.post(demo_events(args.rate, time.time(), rng))
            except SendError as exc:
                print(f"not sent: {exc}", file=sys.stderr, flush=True)
                continue
            sent += answer["accepted"]
            if sent and sent % (args.rate * 60) < args.rate:
                print(f"{sent} demo events accepted so far", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
