"""CPU per request of our request path, in-process (no gunicorn, no network client): the WSGI app
called directly for a cached GET /top-keywords, against a bare Falcon app returning the same body.

    .venv/bin/python bench/bench_request_path.py [--requests 20000] [--redis redis://127.0.0.1:6379/0]

Without --redis the in-process gate is used (our Python alone); with it, every request also makes
its one Redis call. Reports wall and CPU microseconds per request, best of 3 runs.

    .venv/bin/python bench/bench_request_path.py --ping [--redis URL]

times a bare PING on our connection (cache/wire.py), sleeping on the socket for the answer
against polling for it for up to 250 µs (SIGNALS_REDIS_SPIN_MICROSECONDS=250).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_secret import bench_secret  # noqa: E402

PATH = "/api/v1/signals/top-keywords"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=1000,
                        help="keys (subscriptions) the requests rotate over; enough to stay under 300/min each")
    parser.add_argument("--redis", default="", help="REDIS_URL for the gate (default: in-process gate)")
    parser.add_argument("--ping", action="store_true", help="time PING round trips instead (Redis: --redis or local)")
    args = parser.parse_args()
    if args.ping:
        ping(args.redis or "redis://127.0.0.1:6379/0", args.requests)
        return

    work = Path(tempfile.mkdtemp(prefix="signals-bench-path-"))
    data_dir = work / "data"
    bench_secret()
    os.environ.update({"SIGNALS_DATA_DIR": str(data_dir), "SIGNALS_LOG_LEVEL": "warning", "REDIS_URL": args.redis,
                       "SIGNALS_REDIS_PREFIX": f"bench-path-{uuid.uuid4().hex[:8]}:"})
    subprocess.run([sys.executable, "-m", "service", "data", "demo", "--events", "200000", "--days", "30"],
                   cwd=ROOT, check=True, capture_output=True)

    import falcon

    from service.accounts import AccountStore
    from service.api.tiers import Tier

    accounts = AccountStore(f"sqlite:///{data_dir / 'accounts.db'}")
    keys = [accounts.create_key(Tier.PROFESSIONAL)[0] for _ in range(args.keys)]
    accounts.close()
    from service import wsgi

    def environ(key: str) -> dict:
        return {"REQUEST_METHOD": "GET", "PATH_INFO": PATH, "QUERY_STRING": "", "SERVER_NAME": "bench",
                "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "bench", "REMOTE_ADDR": "127.0.0.1",
                "HTTP_AUTHORIZATION": f"Bearer {key}", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(),
                "wsgi.errors": sys.stderr}

    statuses: list[str] = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    body = b"".join(wsgi.app(environ(keys[0]), start_response))
    for key in keys:  # every key accepted once, every body cached
        b"".join(wsgi.app(environ(key), start_response))

    class Fixed:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            resp.content_type = falcon.MEDIA_JSON
            resp.data = body

    bare = falcon.App()
    bare.add_route(PATH, Fixed())

    def measure(app) -> tuple[float, float]:
        statuses.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        for n in range(args.requests):
            b"".join(app(environ(keys[n % len(keys)]), start_response))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert set(statuses) == {"200 OK"}, set(statuses)
        return wall / args.requests * 1e6, cpu / args.requests * 1e6

    results = {"bare": [], "ours": []}
    for _ in range(3):
        results["bare"].append(measure(bare))
        results["ours"].append(measure(wsgi.app))
    print(f"gate: {'Redis at ' + args.redis if args.redis else 'in-process'}; {args.requests} requests, "
          f"{len(body)} byte body, best of 3")
    print("| app | wall µs/request | CPU µs/request |")
    print("|---|---|---|")
    for name, runs in results.items():
        print(f"| {name} | {min(r[0] for r in runs):.1f} | {min(r[1] for r in runs):.1f} |")


def ping(url: str, count: int) -> None:
    from cache import redis_connection

    polling = 250e-6  # the budget docs/caching-and-limits.md suggests when polling is turned on
    print(f"PING at {url}, {count} round trips, best of 3")
    print("| waiting for the answer | wall µs | CPU µs |")
    print("|---|---|---|")
    for label, spin in (("sleeping on the socket", 0.0), (f"polling up to {polling * 1e6:.0f} µs", polling)):
        connection = redis_connection(url, spin)
        connection.call("PING")
        runs = []
        for _ in range(3):
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(count):
                connection.call("PING")
            runs.append(((time.perf_counter() - wall) / count * 1e6, (time.process_time() - cpu) / count * 1e6))
        connection.close()
        print(f"| {label} | {min(r[0] for r in runs):.0f} | {min(r[1] for r in runs):.0f} |")


if __name__ == "__main__":
    main()
