"""Cached GET /top-keywords under load vs a bare Falcon app returning the same bytes.

Both run under the same gunicorn settings (gunicorn.conf.py, same worker count) on loopback and
are loaded by wrk with the same connections and duration, alternately (bare, ours, bare, ours, ...,
bare). The medians are reported, and per round the ratio of each of our runs to the bare
throughput expected at its moment (the bare runs that open this round and the next, weighted by
the run's place in the round, so that a steady drift of the machine's speed cancels), with the
median of those ratios and a distribution-free 95% interval for it (order statistics; 6 rounds
or more). With --bare-headers a second baseline also sends our response headers (the same bytes
on the wire, the baseline the issue names), and our runs are compared with it the same way. Keep
rounds at 10 s or so: the key cache lives 10 s, and much shorter runs measure key look-ups more
than steady state. Our side does everything a real request does: key check (cached per
worker), tier, the moving-window rate limit and the cache read in one Redis round trip, ETag.
Keys are spread over many subscriptions so the limit (300/min each) is not what is measured.

    .venv/bin/python bench/bench_cached.py [--workers N] [--duration 10] [--connections 32] [--rounds 8]
        [--compare-polling] [--bare-headers] [--gate local] [--unix-socket]
        [--worker-class ours|gthread|sync] [--before TREE]

Workers: by default what gunicorn.conf.py gives the API with Redis (cores + 1), set for both apps.
--worker-class runs every server (the bare apps too) under another gunicorn worker than the web
process's own (service/server/gunicorn_worker.py): gunicorn's gthread (SIGNALS_WEB_THREADS threads)
or its sync worker (one request at a time, no keep-alive), to tell the worker's cost from the
request path's. --before TREE also runs our app from another source tree (e.g. the code before a
change: `git archive <commit> | tar -x -C /tmp/before`, with a .venv link), in the same rotation,
with the same data, keys and settings, its own Redis prefix: before and after, side by side.

It also reports the CPU time each party spends per request (gunicorn workers, Redis when it runs
on this machine, wrk), read from /proc around each wrk run.

Needs wrk (Debian package `wrk`) and Redis (REDIS_URL, default redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_secret import bench_secret  # noqa: E402

from service.accounts import AccountStore  # noqa: E402
from service.api.tiers import Tier  # noqa: E402

PATH = "/api/v1/signals/top-keywords"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_SERVERS: dict[str, int] = {}   # base URL -> gunicorn master pid, for the CPU accounting


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds used so far by these processes (Linux /proc)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def workers_of(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children")
    return [int(pid) for pid in children.read_text().split()] if children.exists() else []


WORKER_CLASSES = {  # --worker-class: gunicorn's options for each (the config file's settings otherwise)
    "ours": [],
    "gthread": ["--worker-class", "gthread"],
    # threads > 1 would make gunicorn run gthread instead of the sync worker
    "sync": ["--worker-class", "sync", "--threads", "1"],
}
_GUNICORN_ARGS: list[str] = []


@contextlib.contextmanager
def served(target: str, env: dict[str, str], tree: Path = ROOT):
    port = free_port()
    full_env = {**os.environ, **env, "PORT": str(port), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py", *_GUNICORN_ARGS, target],
        cwd=tree, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    _SERVERS[base] = process.pid
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit(f"{target} did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def wrk(base: str, script: Path, args: argparse.Namespace, redis_pid: int | None = None) -> dict:
    """One wrk run; also the CPU each party spent per request: the server's workers, Redis (when
    it runs on this machine) and wrk itself."""
    workers = workers_of(_SERVERS[base])
    before = (cpu_seconds(workers), cpu_seconds([redis_pid] if redis_pid else []), resource.getrusage(resource.RUSAGE_CHILDREN))
    out = subprocess.run(
        ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s", "--latency", "-s", str(script),
         base + PATH],
        capture_output=True, text=True, check=True,
    ).stdout
    after = (cpu_seconds(workers), cpu_seconds([redis_pid] if redis_pid else []), resource.getrusage(resource.RUSAGE_CHILDREN))
    requests = int(re.search(r"(\d+) requests in", out).group(1))

    def per_request(seconds: float) -> float:
        return round(seconds / max(1, requests) * 1e6, 1)

    cpu_us = {
        "workers": per_request(after[0] - before[0]),
        "redis": per_request(after[1] - before[1]),
        "wrk": per_request(after[2].ru_utime + after[2].ru_stime - before[2].ru_utime - before[2].ru_stime),
    }

    def latency(pct: str) -> float:
        match = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        value, unit = float(match.group(1)), match.group(2)
        return value * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    non_ok = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50_ms": latency("50"),
        "p99_ms": latency("99"),
        "requests": requests,
        "non_2xx": int(non_ok.group(1)) if non_ok else 0,
        "cpu_us_per_request": cpu_us,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1,
                        help="gunicorn workers of every server (default: cores + 1, gunicorn.conf.py's default with Redis)")
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--subscriptions", type=int, default=1000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=8,
                        help="rounds of bare, ours, ...; 6 or more give an interval for the median ratio")
    parser.add_argument("--gate", choices=("redis", "local"), default="redis",
                        help="local: no REDIS_URL, in-process cache and limits per worker (to see what Redis costs)")
    parser.add_argument("--compare-polling", action="store_true",
                        help="also run ours with SIGNALS_REDIS_SPIN_MICROSECONDS=250 (poll for Redis's answer before "
                             "sleeping; off by default), in the same rotation, to see what polling buys")
    parser.add_argument("--bare-headers", action="store_true",
                        help="also run the bare app returning our response headers as well as the body")
    parser.add_argument("--unix-socket", action="store_true",
                        help="start a private redis-server listening on a Unix socket only, and use it")
    parser.add_argument("--worker-class", choices=tuple(WORKER_CLASSES), default="ours",
                        help="the gunicorn worker of every server: ours (gunicorn.conf.py's, the default), "
                             "gunicorn's gthread, or its sync worker (one thread)")
    parser.add_argument("--before", type=Path, metavar="TREE",
                        help="also run our app from this source tree, in the same rotation (before/after)")
    args = parser.parse_args()
    _GUNICORN_ARGS[:] = WORKER_CLASSES[args.worker_class]
    if args.before is not None and not (args.before / "gunicorn.conf.py").exists():
        raise SystemExit(f"--before {args.before}: no gunicorn.conf.py there")
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    with contextlib.ExitStack() as stack:
        if args.unix_socket:
            redis_url = stack.enter_context(unix_socket_redis())
        run(args, redis_url)


def local_redis_pid(url: str) -> int | None:
    """The pid of the Redis at `url` when it runs on this machine (for the CPU accounting)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        pid = int(client.info("server")["process_id"])
    finally:
        client.close()
    return pid if Path(f"/proc/{pid}").exists() else None


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float | None, float | None, float]:
    """The median of `values` and a distribution-free interval for it: the k-th smallest and the
    k-th largest value, with k the largest for which [x(k), x(n+1-k)] covers the true median with
    at least `confidence` (1 - 2 P(Binomial(n, 1/2) < k)). Returns (median, low, high, coverage);
    low and high are None when there are too few values (fewer than 6 for 95 %). It assumes the
    values independent; neighbouring per-round ratios share a bare run, so read it as a guide."""
    ordered, n = sorted(values), len(values)
    k, coverage = 0, 0.0
    for j in range(1, n // 2 + 1):
        covered = 1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2 ** n
        if covered < confidence:
            break
        k, coverage = j, covered
    middle = round(statistics.median(values), 3)
    if k == 0:
        return middle, None, None, 0.0
    return middle, ordered[k - 1], ordered[n - k], round(coverage, 3)


@contextlib.contextmanager
def unix_socket_redis():
    """A private redis-server listening on a Unix socket only (the test suite's throwaway server)."""
    from tests.support.redis_server import ThrowawayRedis

    path = Path(tempfile.mkdtemp(prefix="signals-bench-redis-")) / "redis.sock"
    server = ThrowawayRedis(args=("--port", "0", "--unixsocket", str(path), "--unixsocketperm", "700"),
                            url=f"unix://{path}").start()
    try:
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(path.parent, ignore_errors=True)
        shutil.rmtree(server.dir, ignore_errors=True)


def run(args: argparse.Namespace, redis_url: str) -> None:

    work = Path(tempfile.mkdtemp(prefix="signals-bench-"))
    data_dir = work / "data"
    env = {"SIGNALS_DATA_DIR": str(data_dir), "WEB_CONCURRENCY": str(args.workers), "SIGNALS_LOG_LEVEL": "warning",
           "SIGNALS_SECRET": bench_secret()}
    subprocess.run([sys.executable, "-m", "service", "data", "demo", "--events", str(args.events), "--days", "30"],
                   cwd=ROOT, env={**os.environ, **env}, check=True, capture_output=True)
    accounts = AccountStore(f"sqlite:///{data_dir / 'accounts.db'}")
    keys = [accounts.create_key(Tier.PROFESSIONAL)[0] for _ in range(args.subscriptions)]
    accounts.close()
    script = work / "keys.lua"
    script.write_text(
        "local keys = {" + ",".join(f'"{k}"' for k in keys) + "}\n"
        "local i = 0\n"
        "function init(args) math.randomseed(os.time() + math.floor(os.clock() * 1000000)); i = math.random(#keys) end\n"
        "function request()\n  i = (i % #keys) + 1\n"
        f'  return wrk.format("GET", "{PATH}", {{["Authorization"] = "Bearer " .. keys[i]}})\nend\n'
    )

    ours_env = {**env, "REDIS_URL": redis_url if args.gate == "redis" else "",
                "SIGNALS_REDIS_PREFIX": f"bench-{uuid.uuid4().hex[:8]}:"}
    servers = {"ours": ours_env}
    trees = {"ours": ROOT}
    if args.before is not None:
        servers["before"] = {**ours_env, "SIGNALS_REDIS_PREFIX": f"bench-{uuid.uuid4().hex[:8]}:"}
        trees["before"] = args.before.resolve()
    if args.compare_polling:
        servers["ours-polling"] = {**ours_env, "SIGNALS_REDIS_SPIN_MICROSECONDS": "250",
                                   "SIGNALS_REDIS_PREFIX": f"bench-{uuid.uuid4().hex[:8]}:"}
    results: dict[str, list[dict]] = {"bare": [], **{name: [] for name in servers}}
    with contextlib.ExitStack() as stack:
        bases = {name: stack.enter_context(served("service.wsgi:app", server_env, trees.get(name, ROOT)))
                 for name, server_env in servers.items()}
        for base in bases.values():
            warm = httpx.get(base + PATH, headers={"Authorization": f"Bearer {keys[0]}"}, timeout=30)
            warm.raise_for_status()
            if args.gate == "redis":
                warm = httpx.get(base + PATH, headers={"Authorization": f"Bearer {keys[1]}"})
                assert warm.headers["x-cache"] == "hit"
            else:  # each worker has its own cache: warm them all
                for key in keys[1:20]:
                    httpx.get(base + PATH, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        body_file = work / "body.json"
        body_file.write_bytes(warm.content)
        bare = {"bare": stack.enter_context(served("bench.bare_app:app", {**env, "BENCH_BODY_FILE": str(body_file)}))}
        if args.bare_headers:  # the same headers as one of our hits, less those gunicorn writes itself
            headers_file = work / "headers.json"
            headers_file.write_text(json.dumps([
                [name, value] for name, value in warm.headers.items()
                if name.lower() not in ("server", "date", "connection", "content-length", "content-type")
            ]))
            bare["bare-same-headers"] = stack.enter_context(served(
                "bench.bare_app:app", {**env, "BENCH_BODY_FILE": str(body_file), "BENCH_HEADERS_FILE": str(headers_file)}))
            results["bare-same-headers"] = []
        bases = {**bare, **bases}
        redis_pid = local_redis_pid(redis_url) if args.gate == "redis" else None
        for _ in range(args.rounds):
            for name, base in bases.items():
                results[name].append(wrk(base, script, args, redis_pid))
        closing = {name: wrk(bases[name], script, args, redis_pid) for name in bare}  # bracket the last round

    def median(values: list[float]) -> float:
        return statistics.median(values)

    best = {name: {field: median([r[field] for r in runs]) for field in ("rps", "p50_ms", "p99_ms", "non_2xx")}
            for name, runs in results.items()}
    # Each run against the baseline's throughput expected at its moment: the baseline's runs in
    # this round and the next (the last round is closed by one more run of each baseline),
    # weighted by how far into the round our run came after the baseline's, so that a drift of
    # the machine's speed that is steady over a round cancels out.
    place = {name: n / len(bases) for n, name in enumerate(bases)}

    def per_round(name: str, baseline: str) -> list[float]:
        rps = [r["rps"] for r in results[baseline]] + [closing[baseline]["rps"]]
        step = place[name] - place[baseline]
        return [round(o["rps"] / (rps[i] + (rps[i + 1] - rps[i]) * step), 3) for i, o in enumerate(results[name])]

    pair_ratios = {name: per_round(name, "bare") for name in servers}
    intervals = {name: median_interval(pair_ratios[name]) for name in servers}
    ratios = {name: round(best[name]["rps"] / best["bare"]["rps"], 3) for name in servers}
    report = {
        "command": " ".join(["bench/bench_cached.py", *sys.argv[1:]]), "gate": args.gate,
        "worker_class": args.worker_class, "before": str(args.before) if args.before else None,
        "redis": redis_url if args.gate == "redis" else None,
        "workers": args.workers, "connections": args.connections, "threads": args.threads,
        "duration_s": args.duration, "body_bytes": len(warm.content), "runs": results, "median": best,
        "throughput_ratio": ratios["ours"], "pair_ratios": pair_ratios["ours"],
        "bracketed_median_interval_coverage": intervals["ours"], "closing": closing,
        "variants": {name: {"throughput_ratio": ratios[name], "pair_ratios": pair_ratios[name],
                            "bracketed_median_interval_coverage": intervals[name]} for name in servers},
    }
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cached.json").write_text(json.dumps(report, indent=2))
    print(f"gate {args.gate}{' at ' + redis_url if args.gate == 'redis' else ''}")
    print(f"worker class: {args.worker_class}" + (f"; before: {args.before}" if args.before else ""))
    print(f"body {len(warm.content)} bytes, {args.workers} workers, wrk -t{args.threads} -c{args.connections} "
          f"-d{args.duration}s, medians of {args.rounds} alternating rounds")
    labels = {"bare": "bare Falcon, same body", "bare-same-headers": "bare Falcon, same body and headers",
              "ours": "Signals, cached", "ours-polling": "Signals, cached, polling 250 µs (SPIN=250)",
              "before": f"Signals, cached, from {args.before}"}
    print("| server | requests/s | p50 ms | p99 ms | non-2xx | ratio to bare |")
    print("|---|---|---|---|---|---|")
    for name in results:
        r = best[name]
        ratio = f"**{ratios[name]:.2f}**" if name in ratios else f"{r['rps'] / best['bare']['rps']:.2f}"
        print(f"| {labels[name]} | {r['rps']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['non_2xx']} | {ratio} |")
    print("\nCPU per request, µs (medians of the rounds)")
    print(f"| server | workers | Redis | wrk | whole machine ({os.cpu_count()} cores / throughput) |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        split = {part: median([r["cpu_us_per_request"][part] for r in runs]) for part in ("workers", "redis", "wrk")}
        print(f"| {labels[name]} | {split['workers']:.0f} | {split['redis']:.0f} | {split['wrk']:.0f} | "
              f"{os.cpu_count() * 1e6 / best[name]['rps']:.0f} |")
    for name in servers:
        mid, low, high, coverage = intervals[name]
        print(f"\nthroughput ratio {name} / bare, medians: {ratios[name]:.2f}")
        print(f"  per round, against the bare runs before and after: {pair_ratios[name]}")
        interval = (f"interval [{low:.3f}, {high:.3f}] (order statistics; covers the median with "
                    f"probability {coverage:.1%})" if low is not None else "too few rounds for a 95% interval (6 or more)")
        print(f"  median of those {mid:.3f}, {interval}")
    if args.bare_headers:
        with_headers = {name: round(best[name]["rps"] / best["bare-same-headers"]["rps"], 3) for name in servers}
        same_bytes = {name: per_round(name, "bare-same-headers") for name in servers}
        report["ratio_to_bare_same_headers"] = with_headers
        report["pair_ratios_to_bare_same_headers"] = same_bytes
        report["bracketed_median_interval_coverage_same_headers"] = {
            name: median_interval(values) for name, values in same_bytes.items()}
        (out_dir / "cached.json").write_text(json.dumps(report, indent=2))
        for name in servers:
            mid, low, high, coverage = median_interval(same_bytes[name])
            print(f"\nthroughput ratio {name} / bare app sending the same headers too (the same bytes on the wire), "
                  f"medians: {with_headers[name]:.2f}")
            print(f"  per round: {same_bytes[name]}")
            print(f"  median of those {mid:.3f}" + (f", interval [{low:.3f}, {high:.3f}] ({coverage:.1%})"
                                                    if low is not None else ""))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
