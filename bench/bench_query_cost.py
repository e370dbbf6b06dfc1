"""The cost of a /query: the estimate's speed, the refusal's speed, and what allowed queries take.

    .venv/bin/python bench/bench_query_cost.py                      # 10M events, 90 days, seed 7
    .venv/bin/python bench/bench_query_cost.py --events 1000000 --no-http

Four parts (figures in docs/benchmarks.md, "The cost of a /query"):

1. Estimate, in process: the per-snapshot index built once (cold), then the estimate for the
   heavy query of issue 12 (90d, group_by city, domain, platform, page_context, time, bucket hour)
   and a few others: `cost.estimate`, and `cost.check` (which, for a refused query, also tries the
   narrowings it suggests); median of --repeat runs.
2. Refusal over HTTP: the Procfile's gunicorn (1 worker, no response cache) on the same data; the
   heavy query POSTed once right after start (the worker builds its index then) and --repeat times
   more; the status must be 422.
3. Overrun over HTTP: the same gunicorn with the bound lifted and a short deadline (--overrun):
   how long until the heavy query's 503, and the next request on the same worker.
4. Allowed heavy queries: each computed by `Engine.query` in a fresh process that loaded the data,
   with its wall time, the process's CPU time (all polars threads) and its peak resident memory
   above what it held before the query (sampled every 2 ms), next to the estimate and the true
   number of cells (counted after). Cases are the largest the bound lets through on this data,
   and refused ones near it for comparison (computed anyway); with --heavy the heavy query too.

The data set is the benchmark's (bench/bench_endpoints.py `ensure_data`, generated once into
bench/out/). Machine load (other processes) slows every figure: the report prints the load
average next to them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from bench.bench_endpoints import ensure_data, served  # noqa: E402
from bench.bench_secret import bench_secret  # noqa: E402
from service.api.windows import compute_as_of, window_range  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.engine.cost import QueryTooLarge, estimate  # noqa: E402
from service.engine.cost import check as check_cost  # noqa: E402
from service.engine.polars import PolarsEngine as Engine  # noqa: E402
from service.engine.polars.contributions import bucket_key, key_guards  # noqa: E402
from service.engine.polars.counts import CardinalityIndex, FrameCounts, index_for  # noqa: E402
from service.engine.polars.slicing import time_slice  # noqa: E402
from service.engine.requests import (  # noqa: E402
    FILTER_COLUMNS,
    FlexibleQuery,
)
from service.privacy import Privacy  # noqa: E402
from service.settings import QUERY_MAX_CELLS, Settings  # noqa: E402
from service.store import day_spans  # noqa: E402
from service.store.reader import EventStore  # noqa: E402

HEAVY = {"window": "90d", "group_by": ["city", "domain", "platform", "page_context", "time"], "bucket": "hour"}
ESTIMATED = [
    HEAVY,
    {"window": "90d", "group_by": ["keyword", "time"], "bucket": "hour"},
    {"window": "90d", "group_by": ["keyword", "time"], "bucket": "day"},
    {"window": "90d", "group_by": ["country", "region", "county", "city"]},
    {"window": "90d", "group_by": ["keyword", "city"], "filters": {"countries": ["US", "DE"]}},
]
# The largest queries the bound lets through on the 10M set (estimates 0.5M to 1M cells, 10M events),
# the cheapest big ones, and refused ones around the bound (computed here all the same).
COMPUTED = [
    {"window": "90d"},
    {"window": "90d", "group_by": ["keyword", "time"], "bucket": "day"},
    {"window": "90d", "group_by": ["keyword", "region", "platform"]},
    {"window": "90d", "group_by": ["keyword", "domain", "platform"]},
    {"window": "90d", "group_by": ["keyword", "platform", "time"], "bucket": "day"},
    {"window": "7d", "group_by": ["city", "domain", "platform", "page_context", "time"], "bucket": "hour"},
    {"window": "7d", "group_by": ["keyword", "city"]},
    {"window": "30d", "group_by": ["keyword", "time"], "bucket": "hour", "filters": {"platforms": ["chrome", "firefox", "safari", "edge", "android", "ios"]}},
    {"window": "30d", "group_by": ["keyword", "time"], "bucket": "hour"},
    {"window": "90d", "group_by": ["keyword", "city"]},
]


def request_of(body: dict[str, Any]) -> FlexibleQuery:
    filters = {key: tuple(sorted(values)) for key, values in sorted(body.get("filters", {}).items())}
    return FlexibleQuery(window=body["window"], filters=filters, group_by=tuple(body.get("group_by", ())),
                         bucket=body.get("bucket"))


def label(body: dict[str, Any]) -> str:
    parts = [body["window"], "[" + ", ".join(body.get("group_by", [])) + "]"]
    if body.get("bucket"):
        parts.append(body["bucket"])
    if body.get("filters"):
        parts.append(" ".join(f"{k}={','.join(v)}" for k, v in body["filters"].items()))
    return " ".join(parts)


def engine() -> Engine:
    return Engine(Privacy(bench_secret(), privacy_params(Settings())))


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def true_cells(frames, as_of, req: FlexibleQuery) -> int:
    rows = time_slice(frames.suppressions, window_range(req.window, as_of))
    grouped = [d for d in req.group_by if d != "time"]
    conditions = [pl.col(FILTER_COLUMNS[k]).is_in(list(v)) for k, v in req.filters.items()] + key_guards(rows, grouped)
    kept = rows.lazy().filter(conditions) if conditions else rows.lazy()
    keys = [bucket_key(req.bucket) if d == "time" else d for d in req.group_by]
    return kept.group_by(keys).len().collect().height if keys else 1


# ---- one computation in a process of its own -------------------------------------------------


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def compute_one(data_dir: Path, body: dict[str, Any]) -> dict[str, Any]:
    frames = EventStore(data_dir).snapshot()
    as_of = compute_as_of(dt.datetime.now(dt.UTC), frames.last_event)
    eng, req = engine(), request_of(body)
    cost = estimate(FrameCounts(frames), as_of, req)
    before = rss_mib()
    peak = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mib())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    eng.query(frames, as_of, req)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    sampler.join()
    return {
        "query": label(body), "estimate": cost.cells, "rows": cost.rows,
        "cells": true_cells(frames, as_of, req), "wall_s": round(wall, 2),
        "cpu_s": round(after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, 2),
        "peak_mib": round(peak[0] - before), "rss_mib": round(before), "allowed": cost.cells <= QUERY_MAX_CELLS,
    }


# ---- parts -----------------------------------------------------------------------------------


def part_estimate(data_dir: Path, repeat: int) -> list[str]:
    frames = EventStore(data_dir).snapshot()
    as_of = compute_as_of(dt.datetime.now(dt.UTC), frames.last_event)
    started = time.perf_counter()
    index_for(frames)
    built = (time.perf_counter() - started) * 1000
    builds = median_ms(lambda: CardinalityIndex(day_spans.day_spans(frames.suppressions)), max(3, repeat // 4))
    lines = [f"Index built once per snapshot: {built:.0f} ms the first time, {builds:.0f} ms median of later builds.",
             "", "| query | cells at most | events | estimate ms | check ms | verdict |", "|---|---:|---:|---:|---:|---|"]
    for body in ESTIMATED:
        req = request_of(body)
        cost = estimate(FrameCounts(frames), as_of, req)
        estimated = median_ms(lambda req=req: estimate(FrameCounts(frames), as_of, req), repeat)

        def check(req=req) -> str:
            try:
                check_cost(FrameCounts(frames), as_of, req, QUERY_MAX_CELLS)
                return "allowed"
            except QueryTooLarge as exc:
                return f"refused ({len(exc.narrowings)} narrowings)"

        verdict = check()
        checked = median_ms(check, repeat)
        lines.append(f"| {label(body)} | {cost.cells:,} | {cost.rows:,} | {estimated:.1f} | {checked:.1f} | {verdict} |")
    return lines


def part_http(data_dir: Path, repeat: int) -> list[str]:
    lines = []
    with served(data_dir) as (client, _ready):
        times, statuses = [], []
        for _ in range(repeat + 1):
            started = time.perf_counter()
            resp = client.post("/api/v1/signals/query", json=HEAVY)
            times.append((time.perf_counter() - started) * 1000)
            statuses.append(resp.status_code)
        body = resp.json()
    lines.append(f"Heavy query over HTTP: statuses {sorted(set(statuses))}; first (index built) {times[0]:.0f} ms, "
                 f"then median {statistics.median(times[1:]):.1f} ms, max {max(times[1:]):.1f} ms "
                 f"over {repeat} requests.")
    lines.append("")
    lines.append("```json")
    lines.append(json.dumps({k: body[k] for k in ("type", "status", "detail", "estimated_cells", "max_cells",
                                                  "narrowings")}, indent=1, ensure_ascii=False))
    lines.append("```")
    return lines


def part_overrun(data_dir: Path, deadline: float) -> list[str]:
    """The heavy query with the bound lifted and a short deadline: the 503, and the worker after it."""
    env = {"SIGNALS_QUERY_MAX_CELLS": str(10**12), "SIGNALS_COMPUTE_DEADLINE_SECONDS": f"{deadline:g}"}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # served() starts gunicorn with this process's environment
    try:
        with served(data_dir) as (client, _ready):
            started = time.perf_counter()
            stopped = client.post("/api/v1/signals/query", json=HEAVY)
            took = time.perf_counter() - started
            started = time.perf_counter()
            after = client.post("/api/v1/signals/query", json={"window": "24h", "group_by": ["keyword"]})
            next_ms = (time.perf_counter() - started) * 1000
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    kind = stopped.json().get("type") if stopped.headers.get("content-type", "").startswith("application/problem") else "-"
    return [f"Overrun: the bound lifted and SIGNALS_COMPUTE_DEADLINE_SECONDS={deadline:g}, the heavy query is answered "
            f"{stopped.status_code} {kind} (Retry-After {stopped.headers.get('Retry-After')}) after {took:.1f} s; "
            f"the same worker then answers a 24h query ({after.status_code}) in {next_ms:.0f} ms."]


def part_computed(data_dir: Path, heavy: bool) -> list[str]:
    lines = ["| query | estimate | true cells | events | verdict | wall s | CPU s | RSS before MiB | peak above it MiB |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for body in COMPUTED + ([HEAVY] if heavy else []):
        done = subprocess.run([sys.executable, __file__, "--data-dir", str(data_dir), "--one", json.dumps(body)],
                              capture_output=True, text=True, check=True, cwd=ROOT)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        verdict = "allowed" if r["allowed"] else "refused"
        lines.append(f"| {r['query']} | {r['estimate']:,} | {r['cells']:,} | {r['rows']:,} | {verdict} | "
                     f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['rss_mib']:,} | {r['peak_mib']:,} |")
        print(lines[-1], file=sys.stderr)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-http", action="store_true", help="skip the parts over HTTP (refusal, overrun)")
    parser.add_argument("--overrun", type=float, default=5.0, metavar="SECONDS",
                        help="deadline of the overrun part (the heavy query with the bound lifted; 0: skip)")
    parser.add_argument("--no-estimate", action="store_true", help="skip the in-process estimate part")
    parser.add_argument("--no-compute", action="store_true", help="skip computing the allowed heavy queries")
    parser.add_argument("--heavy", action="store_true",
                        help="also compute the refused heavy query itself (about a minute and 7+ GiB on 10M events)")
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(compute_one(args.data_dir, json.loads(args.one))))
        return
    data_dir, info = ensure_data(args.events, args.days, args.seed)
    out = [f"# /query cost: {info['events']:,} events over {info['days']} days (seed {info['seed']}); "
           f"bound {QUERY_MAX_CELLS:,} cells; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start",
           ""]
    if not args.no_estimate:
        out += part_estimate(data_dir, args.repeat) + [""]
    if not args.no_http:
        out += part_http(data_dir, args.repeat) + [""]
        if args.overrun:
            out += part_overrun(data_dir, args.overrun) + [""]
    if not args.no_compute:
        out += part_computed(data_dir, args.heavy) + [""]
    out.append(f"load average at the end: {os.getloadavg()[0]:.1f}")
    report = "\n".join(out)
    print(report)
    (ROOT / "bench" / "out" / "query_cost.md").write_text(report + "\n")


if __name__ == "__main__":
    main()
