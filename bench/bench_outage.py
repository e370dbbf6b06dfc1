"""Cached GETs with Redis up and with Redis down, side by side in one run, on the real gunicorn.

One gunicorn (gunicorn.conf.py, cores + 1 workers) serves a demo data set with REDIS_URL pointing
at a throwaway redis-server that this script starts. wrk then loads it in alternating phases: "up"
(Redis running) and "down" (the bench has stopped the redis-server: connections are refused, the
workers serve from their per-process cache with per-process limits). Each phase starts with the
switch (Redis started or stopped), then `--settle` seconds of load that are not counted (every
worker notices the change: a worker retries Redis at most every 2 s), then the measured run. A
restarted Redis is empty, like a real one restarted without persistence.

The requests rotate over a set of distinct cached GETs (several endpoints and parameters, the
same list in every phase) and over many Professional subscriptions, so that the rate limit is not
what is measured. With --uncached a second gunicorn with SIGNALS_CACHE_RESPONSES=false (every
request computed: what each request cost during an outage before the per-process cache) is run in
the same rotation, as a reference.

    .venv/bin/python bench/bench_outage.py [--events 300000] [--days 30] [--rounds 3] [--duration 10]
        [--connections 32] [--threads 2] [--workers N] [--uncached] [--single]

Needs wrk (Debian package `wrk`) and redis-server. Writes bench/out/outage.json.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_secret import bench_secret  # noqa: E402

from bench.bench_cached import served, wrk  # noqa: E402
from service.accounts import AccountStore  # noqa: E402
from service.api.tiers import Tier  # noqa: E402
from tests.support.redis_server import ThrowawayRedis  # noqa: E402

BASE = "/api/v1/signals"
# Cached GETs a dashboard would repeat: several endpoints, windows and levels.
PATHS = [
    "/top-keywords", "/top-keywords?window=7d", "/top-keywords?window=30d&limit=100", "/top-keywords?window=1h",
    "/keyword-timeseries?keyword=climate%20change", "/keyword-timeseries?keyword=climate%20change&window=30d&bucket=day",
    "/domain-timeseries?domain=reddit.com&window=7d&bucket=day", "/domain-timeseries?domain=youtube.com",
    "/geo-heat", "/geo-heat?window=7d&level=region", "/geo-heat?window=24h&level=city",
    "/trending", "/trending?window=7d&dimension=domain", "/trending?window=30d&metric=events",
    "/keyword-activity", "/keyword-activity?window=7d&type=added",
]


def wrk_script(path: Path, keys: list[str], paths: list[str]) -> None:
    path.write_text(
        "local keys = {" + ",".join(f'"{k}"' for k in keys) + "}\n"
        "local paths = {" + ",".join(f'"{BASE}{p}"' for p in paths) + "}\n"
        "local i, j = 0, 0\n"
        "function init(args) math.randomseed(os.time() + math.floor(os.clock() * 1000000)); "
        "i = math.random(#keys); j = math.random(#paths) end\n"
        "function request()\n  i = (i % #keys) + 1\n  j = (j % #paths) + 1\n"
        '  return wrk.format("GET", paths[j], {["Authorization"] = "Bearer " .. keys[i]})\nend\n'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1)
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--duration", type=int, default=10, help="seconds of each measured run")
    parser.add_argument("--settle", type=int, default=3, help="seconds of load after each switch, not counted")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--subscriptions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of up, down (and uncached)")
    parser.add_argument("--uncached", action="store_true",
                        help="also run a server with SIGNALS_CACHE_RESPONSES=false (every request computed)")
    parser.add_argument("--single", action="store_true", help="one URL (/top-keywords) instead of the list")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")

    work = Path(tempfile.mkdtemp(prefix="signals-bench-outage-"))
    data_dir = work / "data"
    env = {"SIGNALS_DATA_DIR": str(data_dir), "WEB_CONCURRENCY": str(args.workers), "SIGNALS_LOG_LEVEL": "warning",
           "SIGNALS_SECRET": bench_secret()}
    subprocess.run([sys.executable, "-m", "service", "data", "demo", "--events", str(args.events), "--days",
                    str(args.days), "--no-progress"], cwd=ROOT, env={**os.environ, **env}, check=True,
                   capture_output=True)
    accounts = AccountStore(f"sqlite:///{data_dir / 'accounts.db'}")
    keys = [accounts.create_key(Tier.PROFESSIONAL)[0] for _ in range(args.subscriptions)]
    accounts.close()
    paths = PATHS[:1] if args.single else PATHS
    script = work / "requests.lua"
    wrk_script(script, keys, paths)
    settle = argparse.Namespace(**{**vars(args), "duration": args.settle})

    redis = ThrowawayRedis().start()
    results: dict[str, list[dict]] = {"up": [], "down": []}
    down_sample: collections.Counter[str] = collections.Counter()
    try:
        ours = {**env, "REDIS_URL": redis.url, "SIGNALS_REDIS_PREFIX": f"bench-{uuid.uuid4().hex[:8]}:"}
        with contextlib.ExitStack() as servers:
            base = servers.enter_context(served("service.wsgi:app", ours))
            uncached_base = None
            if args.uncached:
                results["uncached"] = []
                uncached_base = servers.enter_context(served("service.wsgi:app",
                                                             {**ours, "SIGNALS_CACHE_RESPONSES": "false"}))
            for path in paths:  # fill Redis once (the first computation of each answer)
                httpx.get(base + BASE + path, headers={"Authorization": f"Bearer {keys[0]}"},
                          timeout=60).raise_for_status()
            for _ in range(args.rounds):
                if redis.process is None:
                    redis.start()
                wrk(base, script, settle)
                results["up"].append(wrk(base, script, args))
                redis.stop()
                wrk(base, script, settle)
                results["down"].append(wrk(base, script, args))
                degraded = httpx.get(base + "/readyz", timeout=10).json()
                for path in paths * 3:  # still down: what answered, by X-Cache (several workers)
                    answer = httpx.get(base + BASE + path, headers={"Authorization": f"Bearer {keys[1]}"}, timeout=60)
                    down_sample[answer.headers.get("x-cache", str(answer.status_code))] += 1
                if uncached_base:
                    redis.start()
                    wrk(uncached_base, script, settle)
                    results["uncached"].append(wrk(uncached_base, script, args))
    finally:
        redis.stop()
        shutil.rmtree(redis.dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)

    median = {name: {field: statistics.median(r[field] for r in runs) for field in ("rps", "p50_ms", "p99_ms",
                                                                                      "non_2xx", "requests")}
              for name, runs in results.items()}
    ratio = round(median["down"]["rps"] / median["up"]["rps"], 3)
    report = {
        "command": " ".join(["bench/bench_outage.py", *sys.argv[1:]]), "workers": args.workers,
        "events": args.events, "days": args.days, "paths": paths, "connections": args.connections,
        "threads": args.threads, "duration_s": args.duration, "settle_s": args.settle, "rounds": args.rounds,
        "runs": results, "median": median, "down_to_up": ratio, "readyz_while_down": degraded,
        "x_cache_sampled_while_down": dict(down_sample),
    }
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "outage.json").write_text(json.dumps(report, indent=2))
    print(f"{args.events} demo events over {args.days} days, {len(paths)} cached GET URLs, {args.workers} workers, "
          f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, medians of {args.rounds} rounds "
          f"(each phase after {args.settle} s of uncounted load)")
    labels = {"up": "Redis up", "down": "Redis down (stopped)",
              "uncached": "every request computed (SIGNALS_CACHE_RESPONSES=false)"}
    print("| phase | requests/s | p50 ms | p99 ms | non-2xx | requests/s per round |")
    print("|---|---|---|---|---|---|")
    for name, runs in results.items():
        m = median[name]
        print(f"| {labels[name]} | {m['rps']:.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['non_2xx']:.0f} | "
              f"{', '.join(str(round(r['rps'])) for r in runs)} |")
    print(f"\nRedis down / Redis up: {ratio:.2f}")
    print(f"/readyz with Redis stopped: {degraded['status']} ({degraded['checks']['cache'].get('detail', '')}); "
          f"X-Cache of {sum(down_sample.values())} requests sampled after each down phase: {dict(down_sample)}")


if __name__ == "__main__":
    main()
