"""The hour-turn storm: many clients asking the same refresh at once, against the real web process.

What a refresh asks (16 requests): top-keywords 24h / 7d / 30d, geo-heat 7d country / 30d region /
30d city, trending 24h / 7d domain / 30d unique_users, keyword-activity 7d / 30d added,
domain-timeseries 90d day, a top-keywords and a geo-heat compare, and POST /query 30d by keyword
and 90d country x week.

The web process is the Procfile's (gunicorn.conf.py: cores + 1 workers with Redis, their threads)
on the demo data of bench_endpoints.py (`bench/out/data-<events>-<days>-<seed>`), with a fresh
Redis key prefix and a fresh process (so every cache is empty) for each phase:

1. one at a time: the 16 asked once each, one after the other (the sum and the largest);
2. the storm: `--clients` clients (spread over `--subscriptions` Professional subscriptions), each
   asking the 16 in its own shuffled order, one after the other, all at once on the emptied
   cache. A 503's `Retry-After` is honoured, as the project's client does, within the client's
   `--client-timeout` for the request; past it the request counts as a client timeout;
3. the hour turn (`--turn`): the storm asked at as_of H (so the requests are counted as asked),
   then the clock moves to H + 1 h (the test hook of tests/support/hooks: a clock file every
   process reads) with the precompute process running, and the storm asked again at once (stale
   answers allowed, as a refresh at the turn would see) and once more when precompute is done.

For each phase: wall time, p50 / p95 / p99 / max of the final answers, their statuses, the 503s on
the way, client timeouts, X-Cache outcomes, the engine's computations per distinct request
(signals_computations_total from the metrics port), the computations stopped at their work limit
(signals_computations_stopped_total) and repeated (computed more than once), and how often a client
that came back after a 503's `Retry-After` found its answer (the next answer was not a 503).

    .venv/bin/python bench/bench_storm.py [--events 10000000 30000000 ...] [--days 90] [--clients 40]
        [--subscriptions 20] [--client-timeout 120] [--turn] [--threads N]

Needs Redis (REDIS_URL, default redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime as dt
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import ensure_data, free_port  # noqa: E402
from bench_secret import bench_secret  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

API = "/api/v1/signals"
HOOKS = ROOT / "tests" / "support" / "hooks"


def refresh(domain: str) -> list[tuple[str, str, dict | None]]:
    """(method, path with query, JSON body) of the 16 requests a refresh asks."""
    return [
        ("GET", "/top-keywords?window=24h", None),
        ("GET", "/top-keywords?window=7d", None),
        ("GET", "/top-keywords?window=30d", None),
        ("GET", "/geo-heat?window=7d&level=country", None),
        ("GET", "/geo-heat?window=30d&level=region", None),
        ("GET", "/geo-heat?window=30d&level=city", None),
        ("GET", "/trending?window=24h", None),
        ("GET", "/trending?window=7d&dimension=domain", None),
        ("GET", "/trending?window=30d&metric=unique_users", None),
        ("GET", "/keyword-activity?window=7d", None),
        ("GET", "/keyword-activity?window=30d&type=added", None),
        ("GET", f"/domain-timeseries?domain={domain}&window=90d&bucket=day", None),
        ("GET", "/top-keywords?window=7d&compare=previous_period", None),
        ("GET", "/geo-heat?window=7d&level=country&compare=previous_period", None),
        ("POST", "/query", {"window": "30d", "group_by": ["keyword"]}),
        ("POST", "/query", {"window": "90d", "group_by": ["country", "time"], "bucket": "week"}),
    ]


class Server:
    """The Procfile's web process (and, with `precompute`, its precompute process) on `data_dir`."""

    def __init__(self, data_dir: Path, redis_url: str, clock_file: Path | None, threads: int | None,
                 extra: dict[str, str] | None = None) -> None:
        self.port, self.metrics_port = free_port(), free_port()
        self.prefix = f"storm-{uuid.uuid4().hex[:8]}:"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "WEB_CONCURRENCY"))}
        self.env.update({
            "SIGNALS_DATA_DIR": str(data_dir), "REDIS_URL": redis_url, "SIGNALS_REDIS_PREFIX": self.prefix,
            "SIGNALS_SECRET": bench_secret(),
            "PORT": str(self.port), "SIGNALS_METRICS_PORT": str(self.metrics_port), "SIGNALS_LOG_LEVEL": "warning",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            **({"SIGNALS_WEB_THREADS": str(threads)} if threads else {}), **(extra or {}),
        })
        if clock_file is not None:
            self.env.update({"PYTHONPATH": f"{HOOKS}{os.pathsep}{ROOT}", "SIGNALS_TEST_CLOCK_FILE": str(clock_file)})
        self.base = f"http://127.0.0.1:{self.port}"
        self.redis_url = redis_url
        self._processes: list[subprocess.Popen] = []

    def __enter__(self) -> Server:
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        self.log = tempfile.NamedTemporaryFile("w+", prefix="storm-web-", suffix=".log", delete=False)  # noqa: SIM115
        self._processes.append(subprocess.Popen([gunicorn, "-c", "gunicorn.conf.py", "service.wsgi:app"], cwd=ROOT,
                                                env=self.env, stdout=self.log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 600
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(self.base + "/readyz", timeout=5).status_code == 200:
                    break
            if self._processes[0].poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the web process did not start")
            time.sleep(0.5)
        return self

    def start_precompute(self, log: Path) -> None:
        with log.open("w") as output:
            self._processes.append(subprocess.Popen([sys.executable, "-m", "service", "precompute"], cwd=ROOT,
                                                    env={**self.env, "SIGNALS_LOG_LEVEL": "info"}, stdout=output,
                                                    stderr=subprocess.STDOUT))

    def __exit__(self, *exc) -> None:
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        # What the web process warned of (a computation stopped, a fill lock lost) goes with the figures.
        self.log.seek(0)
        warned = [line.rstrip() for line in self.log if "WARNING" in line or "ERROR" in line or "stopped after" in line]
        self.log.close()
        os.unlink(self.log.name)
        for line in warned[-20:]:
            print(f"web: {line}", file=sys.stderr)
        import redis

        client = redis.Redis.from_url(self.redis_url)
        for key in client.scan_iter(f"{self.prefix}*", count=1000):
            client.delete(key)
        client.close()

    def metric(self, name: str, **labels: str) -> float:
        text = httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).text
        return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                   if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))

    def counters(self) -> dict[str, float]:
        """The computations done and stopped so far (every worker's, from the metrics port)."""
        return {"computed": self.metric("signals_computations_total"),
                "stopped": self.metric("signals_computations_stopped_total")}

    def key(self, subscription: str) -> str:
        done = subprocess.run([sys.executable, "-m", "service", "keys", "create", "--tier", "professional",
                               "--subscription", subscription], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, check=True)
        return done.stdout.strip().splitlines()[-1]


class Answer:
    __slots__ = ("status", "seconds", "refused", "timed_out", "cache", "found")

    def __init__(self) -> None:
        self.status, self.seconds, self.refused, self.timed_out, self.cache = 0, 0.0, 0, False, ""
        self.found = 0  # come-backs after a Retry-After whose answer was not a 503


def ask(client: httpx.Client, method: str, path: str, body: dict | None, timeout: float) -> Answer:
    """One request as the project's client makes it: a 503's Retry-After waited for, within `timeout`."""
    answer, started = Answer(), time.monotonic()
    while True:
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            answer.timed_out = True
            break
        try:
            response = client.request(method, API + path, json=body, timeout=left)
        except httpx.TimeoutException:
            answer.timed_out = True
            break
        answer.status, answer.cache = response.status_code, response.headers.get("x-cache", "")
        if response.status_code != 503:
            answer.found += answer.refused > 0  # came back after a Retry-After, and found it
            break
        answer.refused += 1
        wait = float(response.headers.get("retry-after", "1"))
        if time.monotonic() - started + wait > timeout:
            answer.timed_out = True
            break
        time.sleep(wait)
    answer.seconds = time.monotonic() - started
    return answer


def storm(server: Server, keys: list[str], requests: list, clients: int, timeout: float,
          seed: int = 1) -> tuple[float, list[Answer]]:
    answers: list[Answer] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def one_client(n: int) -> None:
        order = requests[:]
        random.Random(seed * 1000 + n).shuffle(order)
        with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {keys[n % len(keys)]}"}) as client:
            start.wait()
            for method, path, body in order:
                answer = ask(client, method, path, body, timeout)
                with lock:
                    answers.append(answer)

    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(one_client, range(clients)))
    return time.monotonic() - began, answers


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(label: str, wall: float, answers: list[Answer], server: Server, since: dict[str, float],
            distinct: int) -> str:
    """One row of the table; `since`: the counters before the phase (Server.counters)."""
    now = server.counters()
    computations, stopped = (now[name] - since.get(name, 0.0) for name in ("computed", "stopped"))
    seconds = [a.seconds for a in answers if not a.timed_out]
    statuses = Counter(a.status for a in answers if not a.timed_out)
    caches = Counter(a.cache for a in answers if not a.timed_out and a.cache)
    refused = sum(a.refused for a in answers)
    found = sum(a.found for a in answers)
    return (f"| {label} | {wall:.1f} | {quantile(seconds, 0.5):.2f} | {quantile(seconds, 0.95):.2f} | "
            f"{quantile(seconds, 0.99):.2f} | {max(seconds):.2f} | "
            f"{', '.join(f'{n} x {s}' for s, n in sorted(statuses.items()))} | {refused} | "
            f"{f'{found} of {refused}' if refused else '-'} | "
            f"{sum(a.timed_out for a in answers)} | {', '.join(f'{n} {c}' for c, n in sorted(caches.items()))} | "
            f"{computations / distinct:.2f} | {stopped:.0f} | {max(0.0, computations - distinct):.0f} |")


def a_domain(server: Server, key: str) -> str:
    """A domain the data has (the most suppressed over 7 days), asked before the cache is emptied."""
    response = httpx.post(server.base + API + "/query", headers={"Authorization": f"Bearer {key}"}, timeout=600,
                          json={"window": "7d", "group_by": ["domain"], "order_by": "suppressions", "limit": 1})
    return response.json()["results"][0]["domain"]


def run(events: int, args: argparse.Namespace, redis_url: str) -> list[str]:
    data_dir, info = ensure_data(events, args.days, args.seed)
    end = dt.datetime.fromisoformat(info["end"].replace("Z", "+00:00"))
    rows = []
    shutil.rmtree(data_dir / "run", ignore_errors=True)  # no compute durations from another run
    with tempfile.TemporaryDirectory() as scratch:
        clock = Path(scratch) / "clock"
        clock.write_text((end - dt.timedelta(minutes=30)).isoformat())  # as_of: end - 1 h
        with Server(data_dir, redis_url, clock, args.threads) as server:
            key = server.key(f"storm-{uuid.uuid4().hex[:6]}")
            domain = a_domain(server, key)
        requests = refresh(domain)
        distinct = len(requests)

        with Server(data_dir, redis_url, clock, args.threads) as server:  # 1. one at a time
            key = server.key(f"storm-{uuid.uuid4().hex[:6]}")
            with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {key}"}) as client:
                single = [ask(client, m, p, b, args.client_timeout) for m, p, b in requests]
            took = [a.seconds for a in single]
            print(f"{events:,} events, one at a time: sum {sum(took):.1f} s, largest {max(took):.1f} s "
                  f"({requests[took.index(max(took))][1]}); statuses {Counter(a.status for a in single)}",
                  file=sys.stderr)
            rows.append(f"| {events:,}: the 16 one at a time | sum {sum(took):.1f}, largest {max(took):.1f} | | | | | "
                        f"{', '.join(f'{n} x {s}' for s, n in Counter(a.status for a in single).items())} "
                        f"| | | | | | | |")

        with Server(data_dir, redis_url, clock, args.threads) as server:  # 2. the storm on an emptied cache
            keys = [server.key(f"storm-{uuid.uuid4().hex[:6]}") for _ in range(args.subscriptions)]
            since = server.counters()
            wall, answers = storm(server, keys, requests, args.clients, args.client_timeout)
            rows.append(summary(f"{events:,}: storm, emptied cache", wall, answers, server, since, distinct))
            print(rows[-1], file=sys.stderr)
            if args.turn:  # 3. the hour turns with precompute
                server.start_precompute(Path(scratch) / "precompute.log")
                time.sleep(3)  # its first round: nothing new to compute (the storm computed as_of H)
                clock.write_text(end.isoformat())  # the hour turns (the clock then stands still)
                since = server.counters()
                wall, answers = storm(server, keys, requests, args.clients, args.client_timeout, seed=2)
                rows.append(summary(f"{events:,}: storm right at the turn (stale allowed)", wall, answers, server,
                                    since, distinct))
                print(rows[-1], file=sys.stderr)
                deadline = time.monotonic() + 900
                while server.metric("signals_precomputed_total") < 2 * distinct and time.monotonic() < deadline:
                    time.sleep(1)
                lag = server.metric("signals_precompute_lag_seconds")
                print((Path(scratch) / "precompute.log").read_text()[-2000:], file=sys.stderr)
                since = server.counters()
                wall, answers = storm(server, keys, requests, args.clients, args.client_timeout, seed=3)
                rows.append(summary(f"{events:,}: storm after precompute (lag {lag:.1f} s)", wall, answers, server,
                                    since, distinct))
                print(rows[-1], file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, nargs="+", default=[10_000_000])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--subscriptions", type=int, default=20)
    parser.add_argument("--client-timeout", type=float, default=120.0)
    parser.add_argument("--threads", type=int, default=None, help="SIGNALS_WEB_THREADS (default: the setting's)")
    parser.add_argument("--turn", action="store_true", help="also the hour turn with precompute")
    args = parser.parse_args()
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    rows = ["| phase | wall s | p50 s | p95 s | p99 s | max s | statuses | 503s on the way | come-backs that found it | "
            "client timeouts | X-Cache | computations per distinct request | stopped | repeated |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for events in args.events:
        rows += run(events, args, redis_url)
    print(f"\n{' '.join(sys.argv)}  (load average {os.getloadavg()[0]:.2f})")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
