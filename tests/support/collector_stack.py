"""The collector and the lander as real processes (the Procfile's commands), events to send them,
and the kill test: both processes killed with SIGKILL at random moments while events are sent and
some acknowledged batches are sent again. Used by tests/collector/test_collector_processes.py (a
small run) and bench/bench_collect.py (the measured one)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl

from connectors.sender import EventSender
from tests.support.processes import ROOT, procfile_command, service_env
from tests.support.redis_server import free_port

KEYWORDS = [f"keyword {i}" for i in range(300)]
DOMAINS = ["reddit.com", "youtube.com", "x.com", "nytimes.com", "bbc.co.uk", "github.com", "example.org"]
PLATFORMS = ["chrome", "firefox", "safari", "edge", "ios", "android"]
CONTEXTS = ["feed", "search", "comments", "article", "video"]
COUNTRIES = ["US", "DE", "FR", "GB", "BR", "IN", "JP"]


def bodies(total: int, batch: int, *, start: dt.datetime, end: dt.datetime, prefix: str = "e",
           seed: int = 7) -> Iterator[bytes]:
    """NDJSON bodies of `batch` events each (the last may be smaller): suppressions and, one in
    ten, keyword changes, ids `<prefix><n>`, times spread evenly over [start, end)."""
    rng = random.Random(seed)
    span = (end - start).total_seconds()
    for first in range(0, total, batch):
        n = min(batch, total - first)
        numbers = range(first, first + n)
        times = [(start + dt.timedelta(seconds=span * i / total)).strftime("%Y-%m-%dT%H:%M:%S.%fZ") for i in numbers]
        kinds = ["keyword_change" if i % 10 == 9 else "suppression" for i in numbers]
        frame = pl.DataFrame({
            "event_id": [f"{prefix}{i}" for i in numbers],
            "type": kinds,
            "ts": times,
            "user_id": [f"user-{rng.randrange(20_000)}" for _ in numbers],
            "keyword": [rng.choice(KEYWORDS) for _ in numbers],
            "platform": [rng.choice(PLATFORMS) for _ in numbers],
            "country": [rng.choice(COUNTRIES) for _ in numbers],
        })
        sup = frame.filter(pl.col("type") == "suppression").with_columns(
            domain=pl.Series([rng.choice(DOMAINS) for _ in range(int((pl.Series(kinds) == "suppression").sum()))],
                             dtype=pl.String),
            page_context=pl.lit("feed"), suppressions=pl.lit(1, dtype=pl.Int64))
        kc = frame.filter(pl.col("type") == "keyword_change").with_columns(action=pl.lit("add"))
        yield sup.write_ndjson().encode() + kc.write_ndjson().encode()


def ingest_key(data_dir: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "service", "keys", "create", "--ingest", "--name", "test"],
                          cwd=ROOT, env=service_env(data_dir), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def count(data_dir: Path, **env: str) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-m", "service", "data", "count", "--json"], cwd=ROOT,
                          env=service_env(data_dir, **env), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class Process:
    """A Procfile process in a session of its own (so SIGKILL reaches gunicorn's master and workers)."""

    def __init__(self, name: str, data_dir: Path, env: dict[str, str], ready_url: str | None = None) -> None:
        self.name, self.data_dir, self.env, self.ready_url = name, data_dir, env, ready_url
        self.output = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed by `stack`)
        self.process: subprocess.Popen | None = None
        self.kills = 0

    def start(self, wait: bool = True) -> None:
        self.process = subprocess.Popen(procfile_command(self.name), cwd=ROOT, env=self.env, stdout=self.output,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
        if wait and self.ready_url:
            deadline = time.monotonic() + 60
            while True:
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(self.ready_url, timeout=2).status_code == 200:
                        return
                assert self.process.poll() is None, self.log()
                assert time.monotonic() < deadline, f"the {self.name} did not become ready: {self.log()}"
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to every process of the group, as `kill -9` (no cleanup of any kind)."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.kills += 1

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        self.output.seek(0)
        return self.output.read()


@contextlib.contextmanager
def stack(data_dir: Path, *, lander: bool = True, **env: str) -> Iterator[tuple[str, Process, Process]]:
    """The collector (on a free port) and the lander, started; yields (collector URL, collector, lander)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    settings = {"SIGNALS_COLLECTOR_PORT": str(port), "SIGNALS_LANDER_INTERVAL_SECONDS": "1", **env}
    collector = Process("collector", data_dir, service_env(data_dir, **settings), base + "/healthz")
    landing = Process("lander", data_dir, service_env(data_dir, **settings))
    try:
        collector.start()
        if lander:
            landing.start()
        yield base, collector, landing
    finally:
        collector.stop()
        landing.stop()
        collector.output.close()
        landing.output.close()


def wait_landed(data_dir: Path, expected: int, lander: Process, timeout: float = 600,
                queue: str | None = None) -> dict[str, int]:
    """Poll `data count` until `expected` events are in (or the log is empty and they never will be);
    `queue`: the RabbitMQ carrier's queue, which must be empty too (its ready messages)."""
    from service.collector import log as event_log

    deadline = time.monotonic() + timeout
    while True:
        counts = count(data_dir)
        empty = not event_log.batches(data_dir)
        if queue is not None:
            from tests.support import rabbitmq

            empty = empty and rabbitmq.depth(queue) == 0
        if sum(counts.values()) >= expected and empty:
            return counts
        assert lander.process is not None and lander.process.poll() is None, lander.log()
        if time.monotonic() > deadline:
            return counts
        time.sleep(0.5)


@dataclasses.dataclass
class ChaosReport:
    events: int
    batches: int
    resent_batches: int
    collector_kills: int
    lander_kills: int
    sender_retries: int
    answered_accepted: int
    answered_duplicates: int
    counts: dict[str, int]
    seconds: float


def chaos(data_dir: Path, *, events: int, batch: int, resend: float = 0.1, kill_between: tuple[float, float] = (2, 6),
          kills: int | None = None, seed: int = 11, start: dt.datetime, end: dt.datetime, **env: str) -> ChaosReport:
    """Send `events` in batches through the collector while a killer thread sends SIGKILL to the
    collector or the lander and starts it again; `resend` of the acknowledged batches are sent a
    second time. Returns what landed once all is quiet.

    When to kill: every `kill_between` seconds (at random), the victim at random; or, with `kills`,
    that many times whatever the machine's speed: after as many batches chosen at random, each a
    few milliseconds (at random) after that batch's post has started, the collector and the lander
    in turn. `env`: more settings of both processes (SIGNALS_COLLECTOR_LOG=amqp://... and
    SIGNALS_COLLECTOR_QUEUE for the RabbitMQ carrier)."""
    key = ingest_key(data_dir)
    rng = random.Random(seed)
    started = time.monotonic()
    total_batches = -(-events // batch)
    planned = sorted(rng.sample(range(total_batches), min(kills, total_batches))) if kills else []
    settings = {"SIGNALS_COLLECTOR_REQUESTS_PER_MINUTE": "1000000", **env}
    with stack(data_dir, **settings) as (base, collector, lander):
        done = threading.Event()
        requests: list[int] = []
        asked = threading.Condition()

        def kill_one(number: int) -> None:
            victim = collector if number % 2 == 0 else lander
            victim.kill()
            victim.start(wait=False)

        def killer() -> None:
            if not planned:
                while not done.wait(rng.uniform(*kill_between)):
                    kill_one(0 if rng.random() < 0.5 else 1)
                return
            for number in range(len(planned)):
                with asked:
                    asked.wait_for(lambda n=number: len(requests) > n or done.is_set())
                    if len(requests) <= number:
                        return
                time.sleep(rng.uniform(0, 0.05))  # in the middle of the post, or of a landing round
                kill_one(number)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        accepted = duplicates = resent = sent = 0
        with EventSender(base, key, timeout=30, max_wait=600, backoff=0.2) as sender:
            try:
                for index, body in enumerate(bodies(events, batch, start=start, end=end, seed=seed)):
                    if index in planned:
                        with asked:
                            requests.append(index)
                            asked.notify_all()
                    answer = sender.post_body(body)
                    accepted += answer["accepted"]
                    duplicates += answer["duplicates"]
                    sent += 1
                    if rng.random() < resend:
                        again = sender.post_body(body)
                        accepted += again["accepted"]
                        duplicates += again["duplicates"]
                        resent += 1
            finally:
                done.set()
                with asked:
                    asked.notify_all()
                thread.join()
            retries = sender.retries
        if lander.process is None or lander.process.poll() is not None:
            lander.start(wait=False)
        counts = wait_landed(data_dir, events, lander, queue=env.get("SIGNALS_COLLECTOR_QUEUE"))
    return ChaosReport(events, sent, resent, collector.kills, lander.kills, retries, accepted, duplicates, counts,
                       time.monotonic() - started)
