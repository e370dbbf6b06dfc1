"""The Procfile's `web` (gunicorn) and `mcp` processes for the MCP tests and benchmark, each writing
its output to a file (not a pipe: a pipe nobody reads fills after about 64 KiB of access log, some
460 requests, and then blocks the worker on its next log line)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from service.api.endpoints import ENDPOINTS
from tests.support.processes import ROOT, create_key, service_env
from tests.support.redis_server import free_port


def procfile() -> dict[str, str]:
    return dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if ":" in line)


@contextlib.contextmanager
def _process(command: str, env: dict[str, str], ready: str, ready_status: int, what: str) -> Iterator[list[str]]:
    """Starts `command`; waits until `ready` answers `ready_status`; yields a list that receives
    the process's output once it has stopped."""
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(shlex.split(command), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   text=True)
        log: list[str] = []
        try:
            deadline = time.monotonic() + 60
            while True:
                with contextlib.suppress(httpx.TransportError):
                    if httpx.request("GET" if ready_status == 200 else "POST", ready, timeout=2).status_code == ready_status:
                        break
                if process.poll() is not None:
                    out.seek(0)
                    raise AssertionError(f"{what} exited: {out.read()}")
                assert time.monotonic() < deadline, f"{what} did not become ready"
                time.sleep(0.1)
            yield log
        finally:
            process.terminate()
            process.wait(timeout=30)
            out.seek(0)
            log.append(out.read())


@contextlib.contextmanager
def api_process(data_dir: Path, **env: str) -> Iterator[tuple[str, list[str]]]:
    """The Procfile's web command on a free port; yields its base URL and the output list."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with _process(procfile()["web"], service_env(data_dir, PORT=str(port), **env), base + "/readyz", 200,
                  "gunicorn") as log:
        yield base, log


@contextlib.contextmanager
def mcp_process(api: str, **extra: str) -> Iterator[tuple[str, list[str]]]:
    """The Procfile's mcp command on a free port, calling the API at `api` (`extra`: more
    environment); yields the /mcp URL and the output list."""
    port = free_port()
    env = {**service_env(Path("/nonexistent")), "SIGNALS_API_URL": api, "SIGNALS_MCP_PORT": str(port), **extra}
    url = f"http://127.0.0.1:{port}/mcp"
    with _process(procfile()["mcp"], env, url, 401, "the MCP server") as log:
        yield url, log


# -- the stack the MCP tests share: the tools (one per data endpoint), a session over either transport

TOOLS = {endpoint.tool: (endpoint.method, endpoint.full_path) for endpoint in ENDPOINTS}  # tool -> its endpoint

class Stack:
    def __init__(self, data_dir: Path, api: str, mcp: str, keys: dict[str, str]) -> None:
        self.data_dir, self.api, self.mcp, self.keys = data_dir, api, mcp, keys

    def rest(self, key: str, tool: str, arguments: dict) -> httpx.Response:
        method, path = TOOLS[tool]
        headers = {"Authorization": f"Bearer {key}"}
        if method == "POST":
            return httpx.post(self.api + path, json=arguments, headers=headers, timeout=30)
        return httpx.get(self.api + path, params=arguments, headers=headers, timeout=30)

    def new_key(self, tier: str) -> str:
        return create_key(self.data_dir, tier)


@contextlib.asynccontextmanager
async def http_session(url: str, key: str | None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client):
        yield client


def stdio_params(stack: Stack, key: str | None) -> StdioServerParameters:
    env = {"SIGNALS_API_URL": stack.api, "PATH": os.environ.get("PATH", "")}
    if key:
        env["SIGNALS_API_KEY"] = key
    return StdioServerParameters(command=sys.executable, args=["-m", "connectors.mcp"], env=env, cwd=str(ROOT))


@contextlib.asynccontextmanager
async def session(stack: Stack, transport: str, key: str):
    if transport == "http":
        async with http_session(stack.mcp, key) as client:
            yield client
    else:
        async with Client(stdio_params(stack, key)) as client:
            yield client


def run(coro):
    return asyncio.run(coro)
