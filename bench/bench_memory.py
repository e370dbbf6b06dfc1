"""Memory of the full process set (the Procfile: web, worker, dashboard, mcp) on one store, per
process and in total, plus the cold latency of every endpoint and the peak while an ingest lands a
new generation under requests (issue 22).

For each --events size: the demo data set (bench/out/data-<events>-<days>-<seed>/, shared with
bench_endpoints.py, generated once) is served by the Procfile's four processes, started as
honcho would start them (Redis on REDIS_URL, default redis://127.0.0.1:6379/0, under a prefix of
its own; SIGNALS_CACHE_RESPONSES=false so that every request is computed; web with its default
workers: cores + 1). Then:

1. cold latency: the first request of every endpoint (largest windows; no response cache; the
   worker computes that endpoint for the first time);
2. every endpoint again from 3 clients until every web worker has served each a few times;
3. RSS and PSS of every process (/proc/PID/smaps_rollup), with the part of each mapped from the
   store's snapshot files; PSS counts a shared page once over all processes, so the PSS column adds
   up to what the set uses; read right after the requests and again 10 s later, idle (what a
   worker keeps between requests);
4. an ingest (`python -m service data ingest`, a Parquet file of --ingest-events rows drawn from
   the store, user ids as raw strings, times spread over the store's days so that the new rows
   interleave with the old ones: the worst case for the snapshot; with --ingest-days D, over the
   last D days only: late events, which merge only the snapshot's tail) while 2 clients keep requesting:
   the peak of the summed PSS of all processes (the ingest's included), sampled every 0.2 s, the
   ingest's own peak RSS and its time, and the requests' statuses during it.

    .venv/bin/python bench/bench_memory.py [--events 10000000 30000000] [--ingest-events 1000000]
        [--ingest-days DAYS] [--compute-deadline SECONDS]

Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime as dt
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_endpoints import ensure_data  # noqa: E402
from bench_secret import bench_secret  # noqa: E402

from service.store import layout, snapshot, snapshot_reading  # noqa: E402
from tests.support import process_memory  # noqa: E402
from tests.support.process_memory import MIB  # noqa: E402
from tests.support.processes import procfile_command  # noqa: E402
from tests.support.redis_server import free_port  # noqa: E402

API = "/api/v1/signals"
IDLE_SECONDS = 10
CASES = [
    ("top-keywords 30d", "GET", "/top-keywords", {"window": "30d", "limit": "500"}),
    ("keyword-timeseries 90d hour", "GET", "/keyword-timeseries", {"keyword": "weather", "window": "90d", "bucket": "hour"}),
    ("domain-timeseries 90d hour", "GET", "/domain-timeseries", {"domain": "reddit.com", "window": "90d", "bucket": "hour"}),
    ("geo-heat 30d city", "GET", "/geo-heat", {"window": "30d", "level": "city"}),
    ("trending 30d keyword", "GET", "/trending", {"window": "30d", "dimension": "keyword"}),
    ("keyword-activity 30d", "GET", "/keyword-activity", {"window": "30d", "limit": "500"}),
    ("query 90d keyword x day", "POST", "/query", {"window": "90d", "group_by": ["keyword", "time"], "bucket": "day",
                                                   "limit": 1000}),
]


def _send(http: httpx.Client, case: tuple) -> httpx.Response:
    _name, method, path, params = case
    if method == "POST":
        return http.post(API + path, json=params)
    return http.get(API + path, params=params)


@contextlib.contextmanager
def procfile_set(data_dir: Path, redis_url: str, deadline: float | None = None) -> Iterator[dict[str, object]]:
    """The Procfile's four processes on `data_dir`; yields their ports and Popen objects."""
    ports = {"web": free_port(), "dashboard": free_port(), "mcp": free_port()}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "REDIS_URL", "WEB_CONCURRENCY"))}
    env.update({
        "SIGNALS_DATA_DIR": str(data_dir), "REDIS_URL": redis_url, "SIGNALS_SECRET": bench_secret(),
        "SIGNALS_REDIS_PREFIX": f"bench-memory-{uuid.uuid4().hex[:8]}:", "SIGNALS_CACHE_RESPONSES": "false",
        "SIGNALS_LOG_LEVEL": "warning", "PORT": str(ports["web"]), "SIGNALS_API_URL": f"http://127.0.0.1:{ports['web']}",
        "SIGNALS_DASHBOARD_PORT": str(ports["dashboard"]), "SIGNALS_MCP_PORT": str(ports["mcp"]),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    })
    if deadline is not None:  # --compute-deadline: otherwise the run command's default (20 s)
        env["SIGNALS_COMPUTE_DEADLINE_SECONDS"] = str(deadline)
    with tempfile.TemporaryFile(mode="w+") as logs:
        yield from _running(env, ports, logs)


def _running(env: dict[str, str], ports: dict[str, int], logs: object) -> Iterator[dict[str, object]]:
    processes = {name: subprocess.Popen(procfile_command(name), cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT)
                 for name in ("web", "worker", "dashboard", "mcp")}
    try:
        deadline = time.monotonic() + 600
        for name, url in (("web", f"http://127.0.0.1:{ports['web']}/readyz"),
                          ("dashboard", f"http://127.0.0.1:{ports['dashboard']}/sign-in")):
            while True:
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(url, timeout=5).status_code == 200:
                        break
                if processes[name].poll() is not None or time.monotonic() > deadline:
                    logs.seek(0)
                    raise SystemExit(f"{name} did not start:\n{logs.read()[-3000:]}")
                time.sleep(0.2)
        yield {"ports": ports, "processes": processes, "env": env}
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.wait(timeout=60)
        logs.seek(0)
        output = logs.read()
        if "Traceback" in output:
            print(output[-5000:], file=sys.stderr)


def key_for(env: dict[str, str]) -> str:
    created = subprocess.run([sys.executable, "-m", "service", "keys", "create", "--tier", "professional"],
                             cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return created.stdout.strip().splitlines()[-1]


def memory_rows(processes: dict[str, subprocess.Popen], under: Path) -> list[tuple[str, process_memory.Usage]]:
    rows = []
    for name, process in processes.items():
        tree = process_memory.tree_usage(process.pid, under)
        if name in ("web", "dashboard"):
            rows.append((f"{name} master", tree[0]))
            rows += [(f"{name} worker {i}", usage) for i, usage in enumerate(tree[1:], start=1)]
        else:
            rows += [(name if i == 0 else f"{name} child {i}", usage) for i, usage in enumerate(tree)]
    return rows


def print_memory(title: str, rows: list[tuple[str, process_memory.Usage]]) -> None:
    print(f"\n{title}\n")
    print("| process | RSS MiB | PSS MiB | of which snapshot (PSS) MiB |")
    print("|---|---:|---:|---:|")
    for name, usage in rows:
        print(f"| {name} | {usage.rss / MIB:,.0f} | {usage.pss / MIB:,.0f} | {usage.mapped_pss / MIB:,.0f} |")
    print(f"| **total** | {sum(u.rss for _n, u in rows) / MIB:,.0f} | **{sum(u.pss for _n, u in rows) / MIB:,.0f}** | "
          f"{sum(u.mapped_pss for _n, u in rows) / MIB:,.0f} |")


def ingest_file(data_dir: Path, rows: int, target: Path, days: int | None = None) -> None:
    """`rows` suppressions drawn from the store's snapshot, in the ingest contract's raw form."""
    frames = snapshot_reading.read(snapshot.snapshot_dir(data_dir, layout.read_generation(data_dir)))[0]["suppressions"]
    if days is not None:  # late events: times among the last `days` days only
        last = frames.get_column("ts")[-1]
        frames = frames.filter(pl.col("ts") >= last - dt.timedelta(days=days))
    sample = frames.sample(n=min(rows, frames.height), seed=1, with_replacement=rows > frames.height)
    sample.with_columns(
        (pl.lit("bench-ingest-") + (pl.int_range(0, pl.len()) % 200_000).cast(pl.String)).alias("user_id"),
        *(pl.col(c).cast(pl.String) for c in ("keyword", "domain", "platform", "page_context", "country", "region",
                                              "county", "city")),
    ).write_parquet(target)


def scratch_store(source: Path, target: Path) -> Path:
    """A store to land into without changing the cached one: its partition, manifest and snapshot
    files hard-linked (none is ever changed in place: landings add files and rename), GENERATION
    copied, a fresh accounts database."""
    target.mkdir(parents=True)
    for name in ("suppressions", "keyword_changes", "generations", "snapshots"):
        if (source / name).exists():
            subprocess.run(["cp", "-al", str(source / name), str(target / name)], check=True)
    (target / layout.GENERATION_FILE).write_text((source / layout.GENERATION_FILE).read_text())
    return target


def measure(events: int, days: int, seed: int, ingest_events: int, redis_url: str,
            deadline: float | None = None, ingest_days: int | None = None) -> None:
    cached, _info = ensure_data(events, days, seed)
    scratch = tempfile.TemporaryDirectory(prefix="bench-memory-", dir=ROOT / "bench" / "out")
    try:
        _measure(scratch_store(cached, Path(scratch.name) / "data"), events, days, ingest_events, redis_url, deadline,
                 ingest_days)
    finally:
        scratch.cleanup()


def _measure(data_dir: Path, events: int, days: int, ingest_events: int, redis_url: str,
             deadline: float | None = None, ingest_days: int | None = None) -> None:
    if not snapshot.snapshot_dir(data_dir, layout.read_generation(data_dir)).is_dir():
        raise SystemExit(f"{data_dir} has no snapshot of its generation (generated before issue 22): remove it")
    size = sum(p.stat().st_size for p in snapshot.snapshot_dir(data_dir, layout.read_generation(data_dir)).iterdir())
    print(f"\n## {events:,} events ({days} days): snapshot {size / MIB:,.0f} MiB on disk")
    with procfile_set(data_dir, redis_url, deadline) as started:
        env, processes = started["env"], started["processes"]
        base = f"http://127.0.0.1:{started['ports']['web']}"
        headers = {"Authorization": f"Bearer {key_for(env)}"}
        print("\n| endpoint (cold: first request, no response cache) | ms | status |\n|---|---:|---:|")
        with httpx.Client(base_url=base, headers=headers, timeout=300) as http:
            for case in CASES:
                started_at = time.perf_counter()
                response = _send(http, case)
                print(f"| {case[0]} | {(time.perf_counter() - started_at) * 1000:,.0f} | {response.status_code} |")

        def rounds(_: int) -> list[int]:
            with httpx.Client(base_url=base, headers=headers, timeout=300) as http:
                return [_send(http, case).status_code for case in CASES]

        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            statuses = [s for batch in pool.map(rounds, range(6)) for s in batch]
        print(f"\nwarm-up: {len(statuses)} requests, statuses {sorted(set(statuses))}")
        print_memory(f"Memory after serving every endpoint ({events:,} events)",
                     memory_rows(processes, snapshot.snapshots_dir(data_dir)))
        # What a worker keeps between requests: polars' allocator (jemalloc) hands freed pages
        # back to the system after a few seconds, so what stays is the worker's own.
        time.sleep(IDLE_SECONDS)
        print_memory(f"The same processes {IDLE_SECONDS} s later, idle ({events:,} events)",
                     memory_rows(processes, snapshot.snapshots_dir(data_dir)))

        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "bench-ingest.parquet"
            ingest_file(data_dir, ingest_events, source, ingest_days)
            stop = threading.Event()
            during: list[int] = []

            def client() -> None:
                with httpx.Client(base_url=base, headers=headers, timeout=300) as http:
                    while not stop.wait(1.0):
                        during.append(_send(http, CASES[1]).status_code)
                        during.append(_send(http, CASES[6]).status_code)

            clients = [threading.Thread(target=client) for _ in range(2)]
            for thread in clients:
                thread.start()
            started_at = time.perf_counter()
            ingest = subprocess.Popen([sys.executable, "-m", "service", "data", "ingest", str(source), "--no-progress"],
                                      cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            peak_total, peak_ingest = 0, 0
            while ingest.poll() is None:
                rows = memory_rows({**processes, "ingest": ingest}, snapshot.snapshots_dir(data_dir))
                peak_total = max(peak_total, sum(u.pss for _n, u in rows))
                peak_ingest = max(peak_ingest, sum(u.rss for n, u in rows if n.startswith("ingest")))
                time.sleep(0.2)
            seconds = time.perf_counter() - started_at
            output = ingest.communicate()[0]
            time.sleep(3)  # the workers follow the new generation
            stop.set()
            for thread in clients:
                thread.join()
        landed = [line for line in output.splitlines() if "landed" in line or "Total" in line]
        print(f"\ningest of {ingest_events:,} events under requests: {seconds:.1f} s "
              f"({ingest_events / seconds:,.0f} events/s end to end, process start included); "
              f"peak summed PSS {peak_total / MIB:,.0f} MiB; ingest peak RSS {peak_ingest / MIB:,.0f} MiB; "
              f"{len(during)} requests during it, statuses {sorted(set(during))}; {' / '.join(landed)}")
        print_memory(f"Memory after the new generation ({events:,} events + {ingest_events:,})",
                     memory_rows(processes, snapshot.snapshots_dir(data_dir)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000_000, 30_000_000])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--ingest-events", type=int, default=1_000_000)
    parser.add_argument("--ingest-days", type=int,
                        help="the ingested events' times among the store's last DAYS days only (late events: "
                        "the snapshot's tail is merged, on a store of several segments: the demo lands one "
                        "per 10M events); default: over all its days (the whole table is merged)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--compute-deadline", type=float,
                        help="SIGNALS_COMPUTE_DEADLINE_SECONDS for the set (default: the run command's, 20 s); "
                        "at 100M events on 2 shared cores the heaviest endpoints need more than 20 s")
    args = parser.parse_args()
    print(f"`{' '.join(['.venv/bin/python', 'bench/bench_memory.py', *sys.argv[1:]])}`; "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for events in args.events:
        measure(events, args.days, args.seed, args.ingest_events, args.redis_url, args.compute_deadline,
                args.ingest_days)


if __name__ == "__main__":
    main()
