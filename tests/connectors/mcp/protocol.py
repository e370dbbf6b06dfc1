"""The protocol revisions the MCP server serves, and an SDK client session speaking each one.

The SDK's `Client` can be pinned to the stateless revision (`mode="2026-07-28"`) and to the
newest handshake revision (`mode="legacy"` offers LATEST_HANDSHAKE_VERSION, 2025-11-25), not to an
older handshake revision: for 2025-06-18 the session sends the `initialize` request with that
`protocolVersion` itself and adopts the answer (`ClientSession.send_request`, `adopt`), so every
later request is that revision's. Over HTTP the tests also speak the wire by hand (httpx), below.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

STATELESS = "2026-07-28"
VERSIONS = ("2025-06-18", "2025-11-25", STATELESS)  # what the server must serve, oldest first
# The SDK this is written against knows them (a newer one that dropped one fails here, not below).
assert STATELESS in MODERN_PROTOCOL_VERSIONS and set(VERSIONS) - {STATELESS} <= set(HANDSHAKE_PROTOCOL_VERSIONS)
CLIENT_INFO = {"name": "signals-tests", "version": "1"}


@contextlib.asynccontextmanager
async def _in_memory(server: Server) -> AsyncIterator[Any]:
    """Streams to `server.run` in this process: the loop stdio serves, without the process."""
    async with create_client_server_memory_streams() as (client_streams, server_streams), \
            anyio.create_task_group() as tasks:
        tasks.start_soon(lambda: server.run(*server_streams, server.create_initialization_options()))
        try:
            yield client_streams
        finally:
            tasks.cancel_scope.cancel()


def _streams(target: Any) -> Any:
    if isinstance(target, Server):
        return _in_memory(target)
    if isinstance(target, StdioServerParameters):
        return stdio_client(target)
    return target  # a transport already (streamable_http_client(...))


@contextlib.asynccontextmanager
async def speaking(version: str, target: Any) -> AsyncIterator[ClientSession]:
    """An SDK client session that speaks `version` to `target`: an in-process `Server`, a
    `StdioServerParameters` or a transport (`streamable_http_client(...)`, used once)."""
    if version in MODERN_PROTOCOL_VERSIONS or version == LATEST_HANDSHAKE_VERSION:
        mode = version if version in MODERN_PROTOCOL_VERSIONS else "legacy"
        async with Client(target, mode=mode) as client:
            assert client.session.protocol_version == version
            yield client.session
        return
    async with _streams(target) as (read, write), ClientSession(read, write) as session:
        answer = await session.send_request(types.InitializeRequest(params=types.InitializeRequestParams(
            protocol_version=version, capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(**CLIENT_INFO))), types.InitializeResult)
        assert answer.protocol_version == version, answer.protocol_version
        session.adopt(answer)
        await session.send_notification(types.InitializedNotification())
        assert session.protocol_version == version
        yield session


# -- the wire by hand: streamable HTTP with httpx ---------------------------------------------------

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def answer_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer given as JSON or as one server-sent event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        messages = [json.loads(d) for d in data if d]
        return next(m for m in messages if "id" in m)
    return response.json()


class WireSession:
    """One caller speaking `version` to the MCP endpoint at `url` over plain HTTP: the initialize
    handshake (and Mcp-Session-Id) for a handshake revision, the per-request envelope (`_meta` and
    the routing headers) for the stateless one."""

    def __init__(self, url: str, key: str | None, version: str) -> None:
        self.url, self.version = url, version
        self.headers = {**ACCEPT, **({"Authorization": f"Bearer {key}"} if key else {})}
        self.ids = iter(range(1, 1_000_000))
        self.initialized: dict[str, Any] | None = None

    def post(self, method: str, params: dict[str, Any] | None = None, *, name: str | None = None) -> httpx.Response:
        params = dict(params or {})
        headers = dict(self.headers)
        if self.version in MODERN_PROTOCOL_VERSIONS:
            params["_meta"] = {PROTOCOL_VERSION_META_KEY: self.version, CLIENT_INFO_META_KEY: CLIENT_INFO,
                               CLIENT_CAPABILITIES_META_KEY: {}}
            headers |= {"MCP-Protocol-Version": self.version, "Mcp-Method": method}
            if name is not None:
                headers["Mcp-Name"] = name
        elif method != "initialize":
            headers["MCP-Protocol-Version"] = self.version
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        return httpx.post(self.url, json=message, headers=headers, timeout=30)

    def initialize(self) -> httpx.Response:
        """The handshake (handshake revisions only): the answer, whose session id later requests carry."""
        response = self.post("initialize", {"protocolVersion": self.version, "capabilities": {},
                                            "clientInfo": CLIENT_INFO})
        if response.status_code == 200:
            self.initialized = answer_of(response)["result"]
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
            self.headers["MCP-Protocol-Version"] = self.version
            done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert httpx.post(self.url, json=done, headers=self.headers, timeout=30).status_code == 202
        return response

    def request(self, method: str, params: dict[str, Any] | None = None, *, name: str | None = None) -> dict[str, Any]:
        """A request's `result` (the test fails on an HTTP or JSON-RPC error)."""
        response = self.post(method, params, name=name)
        assert response.status_code == 200, (method, response.status_code, response.text)
        message = answer_of(response)
        assert "result" in message, message
        return message["result"]
