"""MCP tool-call latency against a direct REST call for the same request and key.

Starts the Procfile's `web` (gunicorn) and `mcp` processes on a demo data set, then times, one call
at a time on warm connections:

- `rest`: the request sent with httpx (keep-alive), as any REST client would;
- `client`: the same through connectors.client.SignalsClient (what each tool call runs);
- `mcp-http`: the tool called with the SDK's client over streamable HTTP (the Procfile's process);
- `mcp-stdio`: the tool called with the SDK's client over stdio (`python -m connectors.mcp`).

Repeated identical requests are answered from the API's response cache (X-Cache: hit), so the
figures are the overhead of each path, not the engine's work. Each path gets fresh keys (one
subscription per 100 calls) so the plan's 300 requests per minute are not what is measured.
Reports median and p95 in milliseconds per tool, and the MCP paths' extra time over `rest`.

    .venv/bin/python bench/bench_mcp.py [--calls 200] [--events 200000] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import httpx2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from connectors.client import SignalsClient  # noqa: E402
from tests.support.mcp_stack import api_process, mcp_process  # noqa: E402
from tests.support.processes import cli, create_key  # noqa: E402

CALLS = {
    "signals_top_keywords": ("top_keywords", "GET", "/api/v1/signals/top-keywords", {"window": "24h", "limit": 50}),
    "signals_query": ("query", "POST", "/api/v1/signals/query",
                      {"window": "7d", "group_by": ["country"], "limit": 50}),
}
PER_KEY = 100


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[max(0, int(round(0.95 * len(ordered))) - 1)] * 1000


def keys_for(data_dir: Path, calls: int) -> list[str]:
    return [create_key(data_dir, "professional") for _ in range(-(-calls // PER_KEY))]


def time_rest(api: str, keys: list[str], method: str, path: str, arguments: dict, calls: int) -> list[float]:
    samples = []
    for key in keys:
        with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            send = (lambda: http.post(path, json=arguments)) if method == "POST" else (lambda: http.get(path, params=arguments))
            send()  # warm the connection and the cache
            for _ in range(min(PER_KEY - 2, calls - len(samples))):
                started = time.perf_counter()
                assert send().status_code == 200
                samples.append(time.perf_counter() - started)
    return samples


def time_client(api: str, keys: list[str], operation: str, arguments: dict, calls: int) -> list[float]:
    samples = []
    for key in keys:
        with SignalsClient(api, key, max_rate_limit_wait=0) as client:
            client.call(operation, arguments)
            for _ in range(min(PER_KEY - 2, calls - len(samples))):
                started = time.perf_counter()
                client.call(operation, arguments)
                samples.append(time.perf_counter() - started)
    return samples


async def time_mcp(connect, keys: list[str], tool: str, arguments: dict, calls: int) -> list[float]:
    samples = []
    for key in keys:
        async with connect(key) as client:
            await client.call_tool(tool, arguments)
            for _ in range(min(PER_KEY - 3, calls - len(samples))):
                started = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                samples.append(time.perf_counter() - started)
                assert not result.is_error, result.content
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200, help="timed calls per path and tool")
    parser.add_argument("--events", type=int, default=200_000, help="demo events when no --data-dir")
    parser.add_argument("--data-dir", type=Path, help="an existing event store (keys are added to its accounts)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        if args.data_dir is None:
            made = cli(data_dir, "data", "demo", "--events", str(args.events), "--days", "30")
            assert made.returncode == 0, made.stderr
        with api_process(data_dir) as (api, _), mcp_process(api) as (mcp_url, _):

            @contextlib.asynccontextmanager
            async def over_http(key: str):
                async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
                            Client(streamable_http_client(mcp_url, http_client=http)) as client):
                    yield client

            def over_stdio(key: str):
                env = {"SIGNALS_API_URL": api, "SIGNALS_API_KEY": key, "PATH": os.environ.get("PATH", "")}
                return Client(StdioServerParameters(command=sys.executable, args=["-m", "connectors.mcp"], env=env,
                                                    cwd=str(ROOT)))

            print(f"{args.calls} timed calls per path and tool, one at a time, cached answers; ms")
            print(f"{'tool':24} {'path':10} {'median':>8} {'p95':>8} {'median - rest':>14}")
            for tool, (operation, method, path, arguments) in CALLS.items():
                results = {
                    "rest": time_rest(api, keys_for(data_dir, args.calls), method, path, arguments, args.calls),
                    "client": time_client(api, keys_for(data_dir, args.calls), operation, arguments, args.calls),
                    "mcp-http": asyncio.run(time_mcp(over_http, keys_for(data_dir, args.calls), tool, arguments,
                                                     args.calls)),
                    "mcp-stdio": asyncio.run(time_mcp(over_stdio, keys_for(data_dir, args.calls), tool, arguments,
                                                      args.calls)),
                }
                rest_median = summary(results["rest"])[0]
                for name, samples in results.items():
                    median, p95 = summary(samples)
                    print(f"{tool:24} {name:10} {median:8.2f} {p95:8.2f} {median - rest_median:+14.2f}")


if __name__ == "__main__":
    main()
