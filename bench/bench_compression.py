"""Does compressing cached bodies in Redis pay? Real response bodies from demo data, stored raw
and zlib-compressed; measures size, SET + GET round trip, and the (de)compression cost.

    .venv/bin/python bench/bench_compression.py [--events 1000000] [--repeat 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import falcon.testing  # noqa: E402
from redis import Redis  # noqa: E402

import cache  # noqa: E402
from service.accounts import AccountStore  # noqa: E402
from service.api.tiers import Tier  # noqa: E402
from service.api.windows import floor_hour  # noqa: E402
from service.app import create_app  # noqa: E402
from service.clock import SystemClock  # noqa: E402
from service.demo.generate import generate_demo  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventStore  # noqa: E402

REQUESTS = {
    "top-keywords limit=50": ("GET", "/top-keywords", {"limit": "50"}),
    "top-keywords limit=500": ("GET", "/top-keywords", {"limit": "500", "window": "30d"}),
    "keyword-timeseries 90d hourly": ("GET", "/keyword-timeseries", {"keyword": "spoilers", "window": "90d"}),
    "query 1000 rows": ("POST", "/query", {"window": "30d", "group_by": ["keyword", "country"], "limit": 1000}),
}


def per_call_us(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="signals-compress-"))
    generate_demo(data_dir, events=args.events, days=90, seed=7, end=floor_hour(SystemClock().now()),
                  secret="bench", progress=False)
    accounts = AccountStore(f"sqlite:///{data_dir / 'accounts.db'}")
    key = accounts.create_key(Tier.PROFESSIONAL)[0]
    client = falcon.testing.TestClient(create_app(Settings(data_dir=data_dir, secret="bench"), store=EventStore(data_dir),
                                                  accounts=accounts, gate=cache.LocalGate()))
    redis = Redis.from_url(args.redis)
    prefix = f"bench-compress-{uuid.uuid4().hex[:6]}:"
    print("| body | raw bytes | zlib-1 bytes | ratio | GET raw us | GET zlib + inflate us | compress us |")
    print("|---|---|---|---|---|---|---|")
    for name, (method, path, params) in REQUESTS.items():
        headers = {"Authorization": f"Bearer {key}"}
        if method == "GET":
            body = client.simulate_get("/api/v1/signals" + path, params=params, headers=headers).content
        else:
            body = client.simulate_post("/api/v1/signals" + path, json=params, headers=headers).content
        packed = zlib.compress(body, 1)
        redis.set(prefix + "raw", body)
        redis.set(prefix + "zlib", packed)
        get_raw = per_call_us(lambda: redis.get(prefix + "raw"), args.repeat)
        get_zlib = per_call_us(lambda: zlib.decompress(redis.get(prefix + "zlib")), args.repeat)
        compress = per_call_us(lambda body=body: zlib.compress(body, 1), args.repeat)
        print(f"| {name} | {len(body)} | {len(packed)} | {len(body) / len(packed):.1f}x | {get_raw:.0f} | "
              f"{get_zlib:.0f} | {compress:.0f} |")
    for suffix in ("raw", "zlib"):
        redis.delete(prefix + suffix)
    redis.close()


if __name__ == "__main__":
    main()
