"""The event collector (issue 43): throughput, time to 202, kill -9, freshness.

    nice .venv/bin/python bench/bench_collect.py throughput [--events 1000000] [--batches 1000 5000 10000] [--senders 4] [--workers 1] [--log disk|amqp]
    nice .venv/bin/python bench/bench_collect.py latency [--rate 50000] [--batch 5000] [--seconds 30] [--log disk|amqp]
    nice .venv/bin/python bench/bench_collect.py kill [--events 5000000] [--batch 5000] [--log disk|amqp]
    nice .venv/bin/python bench/bench_collect.py freshness [--rate 20000] [--lead 120]

Each runs the Procfile's `collector` (gunicorn) and `lander` (`python -m service lander`, every
SIGNALS_LANDER_INTERVAL_SECONDS: the default 10 s, except `kill`, 1 s) on an empty data directory in bench/out/collect/, with an
ingest key made by the command line, and sends with connectors/sender.py. Bodies are generated and
gzip-compressed before the clock starts (tests/support/collector_stack.py `bodies`: suppressions
and one in ten keyword changes, times over the last two hours), so the figures are the
collector's and the lander's, not the client's.

- throughput: `--senders` threads post the bodies as fast as the collector answers; events/s =
  events acknowledged / seconds from the first post to the last 202; "landed" adds the time until
  the lander has taken every batch from the log (the lander running all along): landed, with
  `--hour ended` (the default: events of the two hours before the running one), or held until the
  hour ends, with `--hour running` (events of the running hour: the steady state).
- latency: batches posted open-loop at `--rate` events/s (one every batch/rate seconds, each on a
  thread of a pool, whatever the answers before), for `--seconds`; each post's time to its 202:
  median, p99, max; and whether the collector kept up (acknowledged rate).
- kill: tests/support/collector_stack.py `chaos`: SIGKILL to the collector or the lander (at random,
  every 2-6 s) while `--events` are sent, 10 % of acknowledged batches sent again; then `data count`
  against the events sent.
- freshness: waits for the running hour's last `--lead` seconds, posts events of that hour at
  `--rate` (stamped with the time they are sent) until it ends, then measures the seconds from the
  hour's end until `data count --since <hour> --until <end>` shows every event accepted: the
  lander holds the running hour's events and lands them in its first round after the hour ends
  (what bounds how long after an hour ends its events are in the answers: the answers follow a
  published generation within a second, service/store/reader.py). It waits up to an hour.

`--log amqp` runs them over the RabbitMQ carrier (SIGNALS_COLLECTOR_LOG=amqp://..., a quorum queue of
the run's own on the broker at `--amqp-url`, default the local one with the guest user; removed
after the run) instead of the log directory on the disk (`--log disk`, the default).

Results are printed and appended as JSON lines to bench/out/collect.jsonl.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime as dt
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from connectors.sender import EventSender  # noqa: E402
from service.collector import log as event_log  # noqa: E402
from tests.support import rabbitmq  # noqa: E402
from tests.support.collector_stack import bodies, chaos, count, ingest_key, stack  # noqa: E402
from tests.support.processes import service_env  # noqa: E402

OUT = ROOT / "bench" / "out"


def _fresh(name: str) -> Path:
    directory = OUT / "collect" / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def _window() -> tuple[dt.datetime, dt.datetime]:
    """The two hours before the running one: events that land in the next round (the running
    hour's are held until it ends: `freshness` measures those)."""
    hour = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return hour - dt.timedelta(hours=2), hour


def _running_hour() -> tuple[dt.datetime, dt.datetime]:
    """From the running hour's start to now: events the lander holds until the hour ends (the
    steady state of clients posting as events happen)."""
    now = dt.datetime.now(dt.UTC)
    return now.replace(minute=0, second=0, microsecond=0), now


def _gzipped(total: int, batch: int, prefix: str, hour: str = "ended") -> list[bytes]:
    start, end = _window() if hour == "ended" else _running_hour()
    return [gzip.compress(body, compresslevel=1) for body in bodies(total, batch, start=start, end=end, prefix=prefix)]


def _record(result: dict) -> None:
    result = {"at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "host": platform.node(),
              "cores": os.cpu_count(), **result}
    print(json.dumps(result))
    OUT.mkdir(exist_ok=True)
    with open(OUT / "collect.jsonl", "a") as handle:
        handle.write(json.dumps(result) + "\n")


def _workers_env(workers: int) -> dict[str, str]:
    return {"GUNICORN_CMD_ARGS": f"--workers {workers}"} if workers > 1 else {}


@contextlib.contextmanager
def _log_env(args: argparse.Namespace) -> Iterator[dict[str, str]]:
    """The settings of `--log`: none for the disk; for amqp, the broker and a queue of the run's own."""
    if args.log == "disk":
        yield {}
        return
    queue = rabbitmq.queue_name()
    try:
        yield {"SIGNALS_COLLECTOR_LOG": args.amqp_url, "SIGNALS_COLLECTOR_QUEUE": queue}
    finally:
        rabbitmq.delete(queue, args.amqp_url)


def _waiting(data: Path, env: dict[str, str], url: str) -> bool:
    """Batches not taken by the lander yet: files in the log, or ready messages in the queue."""
    if "SIGNALS_COLLECTOR_QUEUE" in env:
        return rabbitmq.depth(env["SIGNALS_COLLECTOR_QUEUE"], url) > 0
    return bool(event_log.batches(data))


def _p99(times: list[float]) -> float:
    ordered = sorted(times)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1)


def _drain(base: str, key: str, queue: list[bytes], lock: threading.Lock, accepted: list[int],
           times: list[float]) -> None:
    """Post bodies from the shared queue until it is empty (one sender thread of `throughput`)."""
    with EventSender(base, key, timeout=120) as sender:
        while True:
            with lock:
                if not queue:
                    return
                body = queue.pop()
            began = time.perf_counter()
            answer = sender.post_body(body, gzipped=True)
            took = time.perf_counter() - began
            with lock:
                accepted[0] += answer["accepted"]
                times.append(took)


def throughput(args: argparse.Namespace) -> None:
    for batch in args.batches:
        data = _fresh(f"throughput-{batch}")
        key = ingest_key(data)
        payloads = _gzipped(args.events, batch, f"t{batch}-", args.hour)
        with _log_env(args) as log_env, stack(data, SIGNALS_COLLECTOR_REQUESTS_PER_MINUTE="10000000",
                                              SIGNALS_LANDER_INTERVAL_SECONDS="10", **_workers_env(args.workers),
                                              **log_env) as (base, _collector, lander):
            queue = list(payloads)
            accepted = [0]
            times: list[float] = []
            started = time.perf_counter()
            lock = threading.Lock()
            threads = [threading.Thread(target=_drain, args=(base, key, queue, lock, accepted, times))
                       for _ in range(args.senders)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            acknowledged = time.perf_counter() - started
            while _waiting(data, log_env, args.amqp_url):  # (not `data count` in a loop: a process start each)
                time.sleep(0.1)
            while True:  # the queue's last deliveries are landing (the log's files go once landed)
                held = sum(item.events for item in event_log.held(data))
                if sum(count(data).values()) + held >= args.events or not log_env:
                    break
                time.sleep(0.1)
            landed = time.perf_counter() - started  # landed, or held for the running hour's end
            assert sum(count(data).values()) + held == args.events
        _record({"bench": "throughput", "log": args.log, "hour": args.hour, "batch": batch, "events": args.events,
                 "senders": args.senders, "workers": args.workers, "accepted": accepted[0], "held": held,
                 "acknowledged_seconds": round(acknowledged, 2),
                 "events_per_second": round(accepted[0] / acknowledged),
                 "median_ms": round(statistics.median(times) * 1000, 1), "p99_ms": _p99(times),
                 "landed_seconds": round(landed, 2), "landed_events_per_second": round(args.events / landed)})


def latency(args: argparse.Namespace) -> None:
    data = _fresh("latency")
    key = ingest_key(data)
    total = int(args.rate * args.seconds)
    payloads = _gzipped(total, args.batch, "l-", args.hour)
    interval = args.batch / args.rate
    times: list[float] = []
    lock = threading.Lock()
    with _log_env(args) as log_env, stack(data, SIGNALS_COLLECTOR_REQUESTS_PER_MINUTE="10000000",
                                          SIGNALS_LANDER_INTERVAL_SECONDS="10", **_workers_env(args.workers),
                                          **log_env) as (base, _collector, _lander):
        local = threading.local()

        def post(body: bytes) -> None:
            sender = getattr(local, "sender", None)
            if sender is None:
                sender = local.sender = EventSender(base, key, timeout=120)
            began = time.perf_counter()
            sender.post_body(body, gzipped=True)
            with lock:
                times.append(time.perf_counter() - began)

        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
            futures = []
            for index, body in enumerate(payloads):
                delay = started + index * interval - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                futures.append(pool.submit(post, body))
            for future in futures:
                future.result()
        elapsed = time.perf_counter() - started
    times.sort()
    _record({"bench": "latency", "log": args.log, "hour": args.hour, "rate": args.rate, "batch": args.batch, "seconds": args.seconds,
             "workers": args.workers, "posts": len(times), "achieved_events_per_second": round(total / elapsed),
             "median_ms": round(statistics.median(times) * 1000, 1),
             "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1000, 1),
             "max_ms": round(times[-1] * 1000, 1)})


def kill(args: argparse.Namespace) -> None:
    data = _fresh("kill")
    start, end = _window()
    with _log_env(args) as log_env:
        report = chaos(data, events=args.events, batch=args.batch, start=start, end=end, kill_between=(2, 6),
                       **log_env)
    landed = sum(report.counts.values())
    _record({"bench": "kill", "log": args.log, "events": args.events, "batch": args.batch, "batches": report.batches,
             "resent_batches": report.resent_batches, "collector_kills": report.collector_kills,
             "lander_kills": report.lander_kills, "sender_retries": report.sender_retries,
             "answered_accepted": report.answered_accepted, "answered_duplicates": report.answered_duplicates,
             "landed": landed, "exactly_once": landed == args.events, "counts": report.counts,
             "seconds": round(report.seconds, 1)})


def freshness(args: argparse.Namespace) -> None:
    """Events of the running hour posted at `--rate` for its last `--lead` seconds (waiting for
    them first); the seconds from the hour's end until `data count` shows every one of them."""
    data = _fresh("freshness")
    key = ingest_key(data)
    now = dt.datetime.now(dt.UTC)
    end = now.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
    begin = end - dt.timedelta(seconds=args.lead)
    if now < begin - dt.timedelta(seconds=20):
        time.sleep((begin - dt.timedelta(seconds=20) - now).total_seconds())  # start the stack 20 s before
    with stack(data, SIGNALS_COLLECTOR_REQUESTS_PER_MINUTE="10000000", SIGNALS_LANDER_INTERVAL_SECONDS="10") as (
            base, _collector, _lander):
        while dt.datetime.now(dt.UTC) < begin:
            time.sleep(0.1)
        sent = 0
        per_post = max(1, args.rate // 4)
        with EventSender(base, key, timeout=120) as sender:
            serial = 0
            while True:
                began = time.perf_counter()
                moment = dt.datetime.now(dt.UTC)
                if moment >= end - dt.timedelta(seconds=0.5):
                    break
                stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                events = [{"event_id": f"h{serial}-{i}", "type": "suppression", "ts": stamp,
                           "user_id": f"user-{(serial * per_post + i) % 5000}", "keyword": f"keyword {i % 50}",
                           "domain": "reddit.com", "platform": "chrome", "page_context": "feed", "country": "US",
                           "suppressions": 1} for i in range(per_post)]
                sent += sender.post(events)["accepted"]
                serial += 1
                time.sleep(max(0.0, 0.25 - (time.perf_counter() - began)))
        hour_start = (end - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        until = end.strftime("%Y-%m-%dT%H:%M:%SZ")
        while True:
            done = subprocess.run([sys.executable, "-m", "service", "data", "count", "--json", "--since", hour_start,
                                   "--until", until], cwd=ROOT, env=service_env(data), capture_output=True, text=True,
                                  timeout=120)
            landed = json.loads(done.stdout)["suppressions"]
            if landed >= sent:
                seen = dt.datetime.now(dt.UTC)
                break
            time.sleep(0.5)
    _record({"bench": "freshness", "rate": args.rate, "lead_seconds": args.lead, "hour_end": until,
             "events_of_the_hour": sent, "landed": landed,
             "seconds_after_the_hour": round((seen - end).total_seconds(), 1)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    one = sub.add_parser("throughput")
    one.add_argument("--events", type=int, default=1_000_000)
    one.add_argument("--batches", type=int, nargs="+", default=[1000, 5000, 10000])
    one.add_argument("--senders", type=int, default=4)
    one.add_argument("--workers", type=int, default=1)
    one.add_argument("--hour", choices=["ended", "running"], default="ended",
                     help="events of the two hours before the running one (landed at once), or of the running "
                          "hour (held until it ends)")
    one.set_defaults(func=throughput)
    two = sub.add_parser("latency")
    two.add_argument("--rate", type=int, default=50_000)
    two.add_argument("--batch", type=int, default=5000)
    two.add_argument("--seconds", type=float, default=30)
    two.add_argument("--workers", type=int, default=1)
    two.add_argument("--hour", choices=["ended", "running"], default="ended")
    two.set_defaults(func=latency)
    three = sub.add_parser("kill")
    three.add_argument("--events", type=int, default=5_000_000)
    three.add_argument("--batch", type=int, default=5000)
    three.set_defaults(func=kill)
    four = sub.add_parser("freshness")
    four.add_argument("--rate", type=int, default=20_000, help="events per second in the hour's last --lead seconds")
    four.add_argument("--lead", type=int, default=120, help="seconds before the hour's end to start sending")
    four.set_defaults(func=freshness)
    for command in (one, two, three):
        command.add_argument("--log", choices=["disk", "amqp"], default="disk",
                             help="where accepted batches wait: the log directory (disk) or RabbitMQ (amqp)")
        command.add_argument("--amqp-url", default=rabbitmq.URL, help="the broker, with --log amqp")
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
