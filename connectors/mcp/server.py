"""The MCP server: a low-level `mcp` 2.x `Server` whose every tool call is one request to the
Signals REST API through `connectors.client.SignalsClient`, with the caller's own key.

- stdio: one caller, the key in SIGNALS_API_KEY, checked with GET /api/v1/account before serving.
- streamable HTTP at /mcp: every HTTP request carries its caller's `Authorization: Bearer` key,
  checked against the API's GET /api/v1/account (answers cached per key for a minute): 401 with
  `WWW-Authenticate` without a valid key, 403 below Professional. The key travels with each MCP
  message (the SDK hands the handler the HTTP request that carried it), so concurrent callers
  never share a key; the SDK also binds a session to the key that opened it (another key gets 404).
  A malformed `Authorization` is refused here without asking the API: two of them 400, a key with
  characters outside visible ASCII or longer than MAX_KEY_LENGTH 401 (problem+json, never the key).
- Each caller's address goes to the API in `X-Forwarded-For` (`connectors.client.forwarded_chain`:
  the TCP peer, or the chain a proxy in SIGNALS_TRUSTED_PROXIES sent), so the API's throttle of
  failed authentications per address sees the callers, not this server's one address.

Tiers, rate limits, caching, noise and errors are the API's own: nothing is decided here that the
API would decide. Arguments are checked first by the shared client with the API's own words.

The protocol is the SDK's: the stateless revision 2026-07-28 (every request carries its revision
and, over HTTP, its key) and the initialize handshake of 2025-11-25 and 2025-06-18; nothing here
depends on which (the handlers see the same request either way; tests/connectors/mcp/ call every
tool at each, over both transports).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread
import cachetools
import httpx
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from connectors import __version__, problems
from connectors.client import OPENAPI_PATH, USER_AGENT, SignalsClient, SignalsError, forwarded_chain
from connectors.mcp import privacy_notes, prompts, resources
from connectors.mcp.tools import (
    ToolSpec,
    build_tools,
    csv_refusal,
    error_result,
    from_signals_error,
    ok_result,
    part_note,
)
from connectors.operations import INVALID_TITLE, Operations
from connectors.settings import ConnectorSettings, Network

log = logging.getLogger("signals.mcp")

MCP_PLAN = "professional"  # the lowest plan that may use the MCP server
ACCOUNT_TTL = 60.0  # seconds an account answer is reused for the HTTP gate (per key)
REFUSAL_TTL = 30.0  # seconds a 401 for a key is reused (keeps bad keys off the API's auth throttle)
_CLIENTS = 256  # clients (one per key and caller address) kept
# A Signals key is 49 characters (sig_live_ + 40); anything far longer is refused without asking
# the API (whose server refuses header lines over 8 KiB with a page of its own).
MAX_KEY_LENGTH = 256
FORWARDED_SCOPE = "signals.forwarded_for"  # the ASGI scope's entry with the caller's X-Forwarded-For


def fingerprint(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class _KeyClient(SignalsClient):
    """The shared client for one key, reading the operations this server already read (one
    OpenAPI document for the tools' schemas and for the checks), and never waiting on a 429: a
    rate-limited tool call is answered at once with its Retry-After."""

    def __init__(self, base_url: str, key: str, operations: Operations, forwarded_for: str | None = None) -> None:
        super().__init__(base_url, key, max_rate_limit_wait=0, max_retries=2,
                         settings=ConnectorSettings(api_url=base_url), forwarded_for=forwarded_for)
        self._shared_operations = operations

    @property
    def operations(self) -> Operations:
        return self._shared_operations


class Backend:
    """What the tools need from the API: its document (read once), one client per key, the
    account check. Thread-safe; the handlers call it from worker threads."""

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url.rstrip("/")
        self._lock = threading.Lock()
        self._document: dict[str, Any] | None = None
        self._tools: dict[str, ToolSpec] | None = None
        self._operations: Operations | None = None
        self._clients: cachetools.LRUCache[str, _KeyClient] = cachetools.LRUCache(_CLIENTS)
        self._accounts: cachetools.TTLCache[str, dict[str, Any]] = cachetools.TTLCache(4096, ACCOUNT_TTL)
        self._refused: cachetools.TTLCache[str, SignalsError] = cachetools.TTLCache(4096, REFUSAL_TTL)

    def document(self) -> dict[str, Any]:
        with self._lock:
            if self._document is None:
                try:
                    response = httpx.get(self.api_url + OPENAPI_PATH, timeout=10,
                                         headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
                except httpx.TransportError as exc:
                    raise SignalsError(None, "Cannot reach the Signals API",
                                       f"GET {self.api_url}{OPENAPI_PATH}: {type(exc).__name__}: {exc}") from exc
                if response.status_code != 200:
                    raise SignalsError.from_response(response)
                self._document = response.json()
                self._operations = Operations.from_openapi(self._document)
                self._tools = build_tools(self._document)
            return self._document

    def tools(self) -> dict[str, ToolSpec]:
        self.document()
        assert self._tools is not None
        return self._tools

    def plans(self) -> list[str]:
        """Plans from lowest to highest, as the document's account schema lists them."""
        schema = self.document()["paths"]["/api/v1/account"]["get"]["responses"]["200"]["content"]
        return list(schema["application/json"]["schema"]["properties"]["plan"]["enum"])

    def may_use_mcp(self, account: Mapping[str, Any]) -> bool:
        plans = self.plans()
        return account.get("plan") in plans and plans.index(account["plan"]) >= plans.index(MCP_PLAN)

    def client(self, key: str, forwarded_for: str | None = None) -> _KeyClient:
        """The client of a key calling for the caller named by `forwarded_for` (X-Forwarded-For)."""
        self.document()
        name = (fingerprint(key), forwarded_for)
        with self._lock:
            client = self._clients.get(name)
            if client is None:
                assert self._operations is not None
                client = self._clients[name] = _KeyClient(self.api_url, key, self._operations, forwarded_for)
            return client

    def account(self, key: str, *, fresh: bool = False, forwarded_for: str | None = None) -> dict[str, Any]:
        """GET /api/v1/account for the key (reused for ACCOUNT_TTL seconds unless `fresh`);
        SignalsError as the API answered."""
        name = fingerprint(key)
        with self._lock:
            if not fresh:
                if name in self._accounts:
                    return self._accounts[name]
                if name in self._refused:
                    raise self._refused[name]
        try:
            account = self.client(key, forwarded_for).account()
        except SignalsError as exc:
            if exc.status == 401:
                with self._lock:
                    self._refused[name] = exc
            raise
        with self._lock:
            self._accounts[name] = account
        return account

    def call(self, name: str, arguments: Mapping[str, Any] | None, key: str | None,
             forwarded_for: str | None = None) -> types.CallToolResult:
        """One tool call: one request to the API with the key; every failure is a tool error."""
        try:
            tools = self.tools()
        except SignalsError as exc:
            return from_signals_error(exc)
        spec = tools.get(name)
        if spec is None:
            return error_result(problems.problem(problems.UNKNOWN_OPERATION, "Unknown tool", None,
                                                 f"There is no tool {name!r}. Tools: {', '.join(tools)}."))
        if not key:
            return error_result(problems.problem(problems.UNAUTHORIZED, "Missing API key", 401,
                                                 "This call carries no Signals API key."))
        arguments = dict(arguments or {})
        if spec.operation.chooses_format and arguments.get("format") not in (None, "json"):
            refusal = csv_refusal(spec.operation)
            return error_result(problems.problem(problems.INVALID_REQUEST, INVALID_TITLE, 400,
                                                 f"Parameter 'format' {refusal}",
                                                 errors=[{"name": "format", "reason": refusal}]))
        try:
            reply = self.client(key, forwarded_for).fetch(spec.operation.name, arguments)
            body = reply.body
        except SignalsError as exc:
            return from_signals_error(exc)
        except Exception:  # never a traceback to the caller; the log has it
            log.exception("tool %s failed", name)
            return error_result(problems.problem(problems.INTERNAL_ERROR, "Internal error", 500,
                                                 "The MCP server failed to complete the call; see its log."))
        if not isinstance(body, dict):  # not JSON (cannot happen with format json)
            return error_result(problems.problem(problems.UNEXPECTED_ANSWER, "Unexpected answer", 502,
                                                 "The API did not answer with JSON."))
        notes = privacy_notes.notes(spec.operation, body, arguments, reply.privacy_budget)
        return ok_result(body, notes, reply.as_of, stale=reply.headers.get("x-cache") == "stale",
                         part=part_note(spec.operation, reply, arguments))

    def read_resource(self, uri: str, key: str | None, forwarded_for: str | None = None) -> types.ReadResourceResult:
        """A resource's contents (connectors/mcp/resources.py); MCPError naming what went wrong."""
        try:
            document = self.document()
            if uri == resources.METHODOLOGY_URI:
                return resources.contents(uri, resources.methodology(document), "text/markdown")
            if uri == resources.PLAN_URI:
                if not key:
                    raise MCPError(INVALID_PARAMS, "This request carries no Signals API key.")
                account = self.account(key, forwarded_for=forwarded_for)
                return resources.contents(uri, resources.plan_json(document, account), "application/json")
        except SignalsError as exc:
            raise MCPError(INVALID_PARAMS, f"Signals API: {exc.title}: {exc.detail}") from None
        known = ", ".join(str(r.uri) for r in resources.RESOURCES)
        raise MCPError(INVALID_PARAMS, f"There is no resource {uri!r}. Resources: {known}.")


def build_server(backend: Backend, stdio_key: str | None = None) -> Server:
    """The MCP server over `backend`: the tools (one per data endpoint), the resources (methodology,
    the caller's plan) and the prompts. Over stdio every call uses `stdio_key`; over HTTP each call uses the
    key of the HTTP request that carried it (set by `KeyGate`)."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = await anyio.to_thread.run_sync(backend.tools)
        return types.ListToolsResult(tools=[spec.tool for spec in tools.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        key = _caller_key(ctx, stdio_key)
        request = getattr(ctx, "request", None)
        forwarded_for = request.scope.get(FORWARDED_SCOPE) if request is not None else None
        return await anyio.to_thread.run_sync(backend.call, params.name, params.arguments, key, forwarded_for)

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=list(resources.RESOURCES))

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        key = _caller_key(ctx, stdio_key)
        request = getattr(ctx, "request", None)
        forwarded_for = request.scope.get(FORWARDED_SCOPE) if request is not None else None
        return await anyio.to_thread.run_sync(backend.read_resource, str(params.uri), key, forwarded_for)

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[spec.prompt for spec in prompts.PROMPTS.values()])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        try:
            return prompts.get_prompt(params.name, params.arguments)
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None

    return Server("signals", version=__version__, title="Signals",
                  instructions="Aggregated, anonymous, noisy statistics about which keywords people filter out, "
                               "where and on which sites. Every number is an estimate. Read the resource "
                               f"{resources.METHODOLOGY_URI} before comparing periods, and {resources.PLAN_URI} "
                               "for what your plan can call.",
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_read_resource=read_resource, on_list_prompts=list_prompts, on_get_prompt=get_prompt)


def _caller_key(ctx: Any, stdio_key: str | None) -> str | None:
    request = getattr(ctx, "request", None)
    if request is None:
        return stdio_key
    user = request.scope.get("user")
    return user.access_token.token if isinstance(user, AuthenticatedUser) else None


# -- HTTP --------------------------------------------------------------------------------------

def _problem(status: int, title: str, detail: str, headers: Mapping[str, str] | None = None, *,
             kind: str = problems.INVALID_REQUEST, answered: Mapping[str, Any] | None = None):
    """An HTTP refusal in the API's problem shape: the API's own problem when it `answered` one
    (a key it refused), else one of connectors/problems.py's types (`kind`)."""
    body = json.dumps(dict(answered) if answered else problems.problem(kind, title, status, detail)).encode()
    raw = [(b"content-type", b"application/problem+json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]

    async def send_problem(send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})

    return send_problem


class KeyGate:
    """ASGI middleware in front of the SDK's streamable HTTP app: every HTTP request needs a key
    the API accepts (401 + WWW-Authenticate otherwise) on a plan of Professional or above (403),
    as GET /api/v1/account answers. The key is put in the request's scope as the SDK's
    `AuthenticatedUser` (principal: the key's SHA-256), which the SDK uses to bind each session to
    the key that opened it, and the tool handler to forward it; the caller's X-Forwarded-For for
    the API goes in the scope too (FORWARDED_SCOPE)."""

    def __init__(self, app: Any, backend: Backend, trusted_proxies: Sequence[Network] = ()) -> None:
        self.app = app
        self.backend = backend
        self.trusted_proxies = tuple(trusted_proxies)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        challenge = 'Bearer realm="signals"'
        invalid = {"WWW-Authenticate": f'{challenge}, error="invalid_token"'}
        raw = [value for name, value in scope.get("headers", []) if name.lower() == b"authorization"]
        if len(raw) > 1:
            await _problem(400, "Duplicate Authorization header",
                           f"The request has {len(raw)} Authorization headers; send exactly one: "
                           "'Authorization: Bearer <key>'.")(send)
            return
        header = raw[0] if raw else b""
        scheme, _, key_bytes = header.partition(b" ")
        key_bytes = key_bytes.strip(b" \t")
        if scheme.lower() != b"bearer" or not key_bytes:
            await _problem(401, "Missing API key", "Send your Signals API key as 'Authorization: Bearer <key>'.",
                           {"WWW-Authenticate": challenge}, kind=problems.UNAUTHORIZED)(send)
            return
        if len(key_bytes) > MAX_KEY_LENGTH:
            await _problem(401, "Invalid API key",
                           f"The key in the Authorization header is {len(key_bytes):,} bytes long; a Signals API key "
                           f"is 49 characters (sig_live_ and 40 letters and digits).", invalid,
                           kind=problems.UNAUTHORIZED)(send)
            return
        if not all(0x21 <= byte <= 0x7E for byte in key_bytes):
            await _problem(401, "Invalid API key",
                           "The key in the Authorization header has characters a Signals API key never has (a key "
                           "is sig_live_ and 40 letters and digits; check for a stray or non-ASCII character).",
                           invalid, kind=problems.UNAUTHORIZED)(send)
            return
        key = key_bytes.decode("ascii")
        forwarded_for = self._forwarded_for(scope)
        try:
            account = await anyio.to_thread.run_sync(
                lambda: self.backend.account(key, forwarded_for=forwarded_for))
        except SignalsError as exc:
            if exc.status == 401:
                await _problem(401, exc.title, exc.detail, invalid, answered=exc.problem)(send)
            elif exc.status == 429:
                await _problem(429, exc.title, exc.detail, {"Retry-After": str(exc.retry_after or 1)},
                               answered=exc.problem)(send)
            else:
                unavailable = exc.status is None or exc.status >= 500
                await _problem(503 if unavailable else 502, "Cannot check the key",
                               f"The Signals API did not confirm the key: {exc}",
                               kind=problems.UNAVAILABLE if unavailable else problems.UNEXPECTED_ANSWER)(send)
            return
        except Exception as exc:  # never a traceback to the caller; the log names no key (nor the message)
            log.error("checking a key failed: %s at %s", type(exc).__name__, _where(exc))
            await _problem(502, "Cannot check the key", "The MCP server failed to check the key with the "
                           "Signals API; see its log.", kind=problems.UNEXPECTED_ANSWER)(send)
            return
        if not self.backend.may_use_mcp(account):
            await _problem(403, "Plan too low",
                           f"Plan {account.get('plan_label') or account.get('plan')} cannot use the MCP server; "
                           "it needs Professional.",
                           {"WWW-Authenticate": f'{challenge}, error="insufficient_scope"'},
                           kind=problems.INSUFFICIENT_TIER)(send)
            return
        token = AccessToken(token=key, client_id=fingerprint(key), scopes=[str(account.get("plan"))])
        await self.app({**scope, "user": AuthenticatedUser(token), FORWARDED_SCOPE: forwarded_for}, receive, send)

    def _forwarded_for(self, scope: Any) -> str | None:
        """The caller as the API should see it: the TCP peer, or the chain a trusted proxy sent."""
        client = scope.get("client")
        incoming = b",".join(v for n, v in scope.get("headers", []) if n.lower() == b"x-forwarded-for")
        return forwarded_chain(client[0] if client else None, incoming.decode("latin-1"), self.trusted_proxies)


def _where(exc: BaseException) -> str:
    """file:line where an exception was raised (its message may hold the key; this does not)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "?"


def http_app(backend: Backend, *, host: str = "127.0.0.1", path: str = "/mcp",
             trusted_proxies: Sequence[Network] = ()) -> Any:
    """The ASGI app: KeyGate in front of the SDK's streamable HTTP app at `path`."""
    server = build_server(backend)
    return KeyGate(server.streamable_http_app(streamable_http_path=path, host=host), backend, trusted_proxies)
