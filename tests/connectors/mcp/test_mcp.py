"""The MCP server (connectors/mcp) with the SDK's own client, over stdio and streamable HTTP, at
each protocol revision it serves (2025-06-18, 2025-11-25, the stateless 2026-07-28; also spoken by
hand over HTTP), against the real API: gunicorn from the Procfile on the fixture data, and the
Procfile's `mcp:` process in front of it."""

from __future__ import annotations

import asyncio
import json
import subprocess

import httpx
import httpx2
import jsonschema
import pytest
from mcp.client.streamable_http import streamable_http_client

from connectors.mcp import privacy_notes
from service.api.endpoints import ENDPOINTS
from tests.connectors.mcp.protocol import STATELESS, VERSIONS, WireSession, speaking
from tests.connectors.mcp.test_mcp_snapshot import REWRITE, pinned
from tests.support.mcp_stack import TOOLS, http_session, run, session, stdio_params
from tests.support.processes import cli

pytestmark = pytest.mark.process

CALLS = {endpoint.tool: dict(endpoint.example) for endpoint in ENDPOINTS}  # the table's example of each
RECORDS = {endpoint.tool: endpoint.records_field for endpoint in ENDPOINTS}


def without_notes(structured: dict) -> dict:
    """A result's structured content less the privacy notes: the REST body."""
    return {name: value for name, value in structured.items() if name != privacy_notes.MEMBER}


def body_schema(schema: dict) -> dict:
    """A tool's output schema less the privacy notes: the endpoint's 200 JSON schema."""
    body = {**schema, "properties": without_notes(schema["properties"])}
    body["required"] = [name for name in schema["required"] if name != privacy_notes.MEMBER]
    return body


# -- the tools ---------------------------------------------------------------------------------

@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_tool_list_is_one_per_endpoint_with_the_documents_schemas(stack, transport):
    document = httpx.get(stack.api + "/api/v1/openapi").json()

    async def go():
        async with session(stack, transport, stack.keys["professional"]) as client:
            return (await client.list_tools()).tools

    tools = run(go())
    assert sorted(t.name for t in tools) == sorted(TOOLS)
    for tool in tools:
        method, path = TOOLS[tool.name]
        op = document["paths"][path][method.lower()]
        assert op["x-mcp-tool"] == tool.name
        if method == "POST":
            assert tool.input_schema == op["requestBody"]["content"]["application/json"]["schema"]
        else:
            params = op["parameters"]
            assert list(tool.input_schema["properties"]) == [p["name"] for p in params]
            for p in params:
                assert tool.input_schema["properties"][p["name"]] == {**p["schema"], "description": p["description"]}
            assert tool.input_schema.get("required", []) == [p["name"] for p in params if p["required"]]
            assert tool.input_schema["additionalProperties"] is False
        assert body_schema(tool.output_schema) == op["responses"]["200"]["content"]["application/json"]["schema"]
        assert tool.output_schema["properties"][privacy_notes.MEMBER]["type"] == "object"
        assert (tool.annotations.read_only_hint, tool.annotations.idempotent_hint, tool.annotations.open_world_hint,
                tool.annotations.title) == (True, True, False, op["summary"])
        assert "estimate" in tool.description and op["summary"].rstrip(".") in tool.description


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_every_tool_answers_the_rest_body(stack, transport):
    key = stack.keys["professional"]

    async def go():
        async with session(stack, transport, key) as client:
            return {name: await client.call_tool(name, arguments) for name, arguments in CALLS.items()}

    results = run(go())
    for name, result in results.items():
        assert not result.is_error, (name, result.content)
        expected = stack.rest(key, name, CALLS[name])
        assert expected.status_code == 200
        assert without_notes(result.structured_content) == expected.json(), name
        assert result.structured_content[privacy_notes.MEMBER]["disclaimer"] == expected.json()["disclaimer"]
        assert json.loads(result.content[0].text) == expected.json(), name
        # and which hour the numbers end at: the answer's own as_of (X-Signals-As-Of)
        assert result.content[1].text == f"Numbers as of {expected.headers['x-signals-as-of']} (UTC).", name
        # and, when the answer holds more rows than it shows, how many (Signals-Total-Rows); this
        # stack's data (the real privacy stage on the small fixture) answers whole: a part is
        # tested in process, tests/connectors/mcp/test_mcp_parts.py
        shown = len(expected.json()[RECORDS[name]])
        total = int(expected.headers["signals-total-rows"])
        if total > shown:
            assert result.content[2].text.startswith(f"This answer shows {shown} of {total} rows"), name
        else:
            assert len(result.content) == 3, name
        # and, last, what the subscription's privacy budget stands at after it (Signals-Privacy-Budget)
        assert result.content[-1].text.startswith("Privacy budget: "), name


def test_as_of_compare_and_intervals_reach_the_tools(stack):
    """Issue 25's parameters come with the document: the tools take them and answer the REST body
    (whose records then carry previous, change and intervals, within the tools' output schemas)."""
    key = stack.keys["professional"]
    calls = {
        "signals_geo_heat": dict(window="7d", level="country", compare="previous_period", intervals=True),
        "signals_query": dict(window="7d", group_by=["keyword"], compare="previous_period", intervals=True),
        "signals_trending": dict(window="24h", as_of="2026-03-10T06:00:00Z"),
    }

    async def go():
        async with session(stack, "http", key) as client:
            return {name: await client.call_tool(name, arguments) for name, arguments in calls.items()}

    for name, result in run(go()).items():
        assert not result.is_error, (name, result.content)
        arguments = {k: ("true" if v is True else v) for k, v in calls[name].items()} \
            if TOOLS[name][0] == "GET" else calls[name]
        assert without_notes(result.structured_content) == stack.rest(key, name, arguments).json(), name
        asked = "intervals" in calls[name]
        assert ("intervals" in result.structured_content[privacy_notes.MEMBER]) is asked, name
    records = run(go())["signals_query"].structured_content["results"]
    assert records and {"previous", "change", "intervals"} <= set(records[0])


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_bad_arguments_are_tool_errors_naming_the_parameter(stack, transport):
    async def go():
        async with session(stack, transport, stack.keys["professional"]) as client:
            return [
                await client.call_tool("signals_top_keywords", {"window": "2h"}),
                await client.call_tool("signals_top_keywords", {"limit": 501}),
                await client.call_tool("signals_keyword_timeseries", {}),
                await client.call_tool("signals_trending", {"dimensoin": "keyword"}),
                await client.call_tool("signals_query", {"window": "7d", "group_by": ["time"]}),
                await client.call_tool("signals_query", {"window": "7d", "group_by": ["keyword"], "format": "csv"}),
            ]

    named = ["window", "limit", "keyword", "dimensoin", "bucket", "format"]
    for result, name in zip(run(go()), named, strict=True):
        assert result.is_error
        assert [e["name"] for e in result.structured_content["errors"]] == [name]
        assert f"'{name}'" in result.content[0].text and "Traceback" not in result.content[0].text


def test_an_api_refusal_is_a_tool_error_with_the_problem(stack):
    """The API's own refusals come back as tool errors with its title, detail and status: here a
    key revoked while a stdio session is open (the plan was checked at start; the API decides)."""
    key = stack.new_key("professional")

    async def go():
        async with session(stack, "stdio", key) as client:
            first = await client.call_tool("signals_geo_heat", {})
            revoked = cli(stack.data_dir, "keys", "revoke", key)
            assert revoked.returncode == 0, revoked.stderr
            return first, await client.call_tool("signals_geo_heat", {})

    first, second = run(go())
    assert not first.is_error
    assert second.is_error and second.structured_content["status"] == 401
    problem = stack.rest(key, "signals_geo_heat", {}).json()
    assert second.structured_content["title"] == problem["title"]
    assert second.structured_content["detail"] == problem["detail"]
    assert problem["title"] in second.content[0].text


# -- each protocol revision ------------------------------------------------------------------------

def _check_result(stack, key, name, result, output_schema):
    assert not result.is_error, (name, result.content)
    jsonschema.validate(result.structured_content, output_schema)
    assert without_notes(result.structured_content) == stack.rest(key, name, CALLS[name]).json(), name
    notes = result.structured_content[privacy_notes.MEMBER]
    assert notes["budget"]["limit"] > 0 and notes["disclaimer"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("version", VERSIONS)
def test_each_revision_with_the_sdks_client(stack, transport, version):
    """The SDK's client pinned to each revision (protocol.py) lists the same tools, with their
    output schemas and annotations, and gets structured results that validate against them."""
    key = stack.keys["professional"]
    name = "signals_geo_heat"

    async def go():
        if transport == "stdio":
            async with speaking(version, stdio_params(stack, key)) as client:
                return (await client.list_tools()).tools, await client.call_tool(name, CALLS[name])
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http, \
                speaking(version, streamable_http_client(stack.mcp, http_client=http)) as client:
            return (await client.list_tools()).tools, await client.call_tool(name, CALLS[name])

    tools, result = run(go())
    listed = [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]
    # the pinned list (tests/connectors/mcp/snapshots/), at every revision
    assert listed == pinned()["tools"], f"not the pinned tool list: review, then rewrite with {REWRITE}"
    _check_result(stack, key, name, result, next(t.output_schema for t in tools if t.name == name))


@pytest.mark.parametrize("version", VERSIONS)
def test_each_revision_on_the_wire(stack, version):
    """Spoken by hand over streamable HTTP: the handshake revisions' initialize answers the same
    revision (the stateless one has none: server/discover names it); tools/list has outputSchema and
    annotations by the protocol's names, tools/call structuredContent beside the content."""
    key = stack.keys["professional"]
    wire = WireSession(stack.mcp, key, version)
    if version == STATELESS:
        discovered = wire.request("server/discover")
        assert STATELESS in discovered["supportedVersions"]
    else:
        opened = wire.initialize()
        assert opened.status_code == 200 and wire.initialized["protocolVersion"] == version
        assert wire.initialized["serverInfo"]["name"] == "signals"
    tools = wire.request("tools/list")["tools"]
    assert tools == pinned()["tools"], f"not the pinned tool list: review, then rewrite with {REWRITE}"
    for tool in tools:
        assert tool["annotations"]["readOnlyHint"] is True and "outputSchema" in tool
    name = "signals_top_keywords"
    result = wire.request("tools/call", {"name": name, "arguments": CALLS[name]}, name=name)
    assert result.get("isError") in (None, False), result
    rest = stack.rest(key, name, CALLS[name]).json()
    assert without_notes(result["structuredContent"]) == rest and json.loads(result["content"][0]["text"]) == rest
    jsonschema.validate(result["structuredContent"], next(t["outputSchema"] for t in tools if t["name"] == name))
    assert set(result["structuredContent"][privacy_notes.MEMBER]) == {"disclaimer", "budget"}
    assert result["content"][-1]["text"].startswith("Privacy budget: ")
    refused = wire.request("tools/call", {"name": name, "arguments": {"window": "2h"}}, name=name)
    assert refused["isError"] is True and refused["structuredContent"]["errors"][0]["name"] == "window"


@pytest.mark.parametrize("version", VERSIONS)
def test_each_revision_is_refused_without_a_key_and_below_professional(stack, version):
    def first(key):
        wire = WireSession(stack.mcp, key, version)
        return wire.post("server/discover") if version == STATELESS else wire.initialize()

    missing = first(None)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert first("sig_live_nope").status_code == 401
    for tier in ("observer", "analyst"):
        low = first(stack.keys[tier])
        assert low.status_code == 403 and "Professional" in low.json()["detail"], tier
    assert first(stack.keys["professional"]).status_code == 200


# -- keys and plans ----------------------------------------------------------------------------

def test_http_refuses_missing_invalid_and_low_plan_keys(stack):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    none = httpx.post(stack.mcp, json=initialize, headers=headers)
    assert none.status_code == 401 and none.headers["www-authenticate"].startswith("Bearer")
    bad = httpx.post(stack.mcp, json=initialize, headers={**headers, "Authorization": "Bearer sig_live_nope"})
    assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers["www-authenticate"]
    for tier in ("observer", "analyst"):
        low = httpx.post(stack.mcp, json=initialize, headers={**headers, "Authorization": f"Bearer {stack.keys[tier]}"})
        assert low.status_code == 403, tier
        assert "Professional" in low.json()["detail"]
    ok = httpx.post(stack.mcp, json=initialize, headers={**headers, "Authorization": f"Bearer {stack.keys['professional']}"})
    assert ok.status_code == 200

    async def sdk(key):
        async with http_session(stack.mcp, key) as client:
            await client.list_tools()

    for key in (None, "sig_live_nope", stack.keys["observer"]):  # the SDK's client cannot even connect
        try:
            run(sdk(key))
        except Exception:  # noqa: BLE001 - how the SDK reports an HTTP refusal is its own business
            continue
        pytest.fail(f"the SDK's client connected with {key!r}")


@pytest.mark.parametrize("tier", ["observer", "analyst", "invalid", "missing"])
def test_stdio_refuses_at_start(stack, tier):
    key = {"invalid": "sig_live_nope", "missing": None}[tier] if tier in ("invalid", "missing") else stack.keys[tier]
    params = stdio_params(stack, key)
    process = subprocess.run([params.command, *params.args], env=params.env, cwd=params.cwd, input="",
                             capture_output=True, text=True, timeout=60)
    assert process.returncode == 2
    assert process.stderr.startswith("signals-mcp: ") and "Traceback" not in process.stderr
    if tier in ("observer", "analyst"):
        assert "needs the Professional plan" in process.stderr
    elif tier == "invalid":
        assert "refused the key" in process.stderr
    else:
        assert "SIGNALS_API_KEY is not set" in process.stderr


# -- same subscription, same limits --------------------------------------------------------------

def test_tool_calls_count_against_the_subscriptions_rate_limit(stack):
    key = stack.new_key("professional")

    def remaining() -> int:
        answer = stack.rest(key, "signals_top_keywords", {})
        assert answer.status_code == 200
        return int(answer.headers["x-ratelimit-remaining"])

    async def calls(n: int):
        async with session(stack, "http", key) as client:
            return [await client.call_tool("signals_top_keywords", {}) for _ in range(n)]

    before = remaining()
    results = run(calls(3))
    assert not any(r.is_error for r in results)
    after = remaining()
    # 3 tool calls + the REST call itself + at most one account check by the HTTP gate
    assert before - after in (4, 5)

    limit = int(stack.rest(key, "signals_top_keywords", {}).headers["x-ratelimit-limit"])
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as http:
        for _ in range(limit + 1):
            if http.get(stack.api + "/api/v1/signals/top-keywords").status_code == 429:
                break
        else:
            pytest.fail("the REST calls never reached the limit")
    result = run(calls(1))[0]
    assert result.is_error
    assert result.structured_content["status"] == 429 and result.structured_content["retry_after"] >= 1
    assert "retry in" in result.content[0].text


def test_concurrent_sessions_with_different_keys_stay_apart(stack):
    """Two sessions with different keys call tools at the same time, a different number of times;
    each subscription's rate-limit counter moves by exactly its own session's calls (plus the HTTP
    gate's one account check), so every call reached the API with its own session's key."""
    keys = [stack.new_key("professional"), stack.new_key("professional")]
    counts = [3, 7]

    def remaining(key: str) -> int:
        return int(stack.rest(key, "signals_top_keywords", {}).headers["x-ratelimit-remaining"])

    async def one(key: str, n: int) -> list:
        async with http_session(stack.mcp, key) as client:
            results = []
            for _ in range(n):
                results.append(await client.call_tool("signals_top_keywords", {"window": "24h"}))
                await asyncio.sleep(0.01)
            return results

    async def both():
        return await asyncio.gather(*(one(key, n) for key, n in zip(keys, counts, strict=True)))

    before = [remaining(key) for key in keys]
    for results, n in zip(run(both()), counts, strict=True):
        assert len(results) == n and all(not r.is_error for r in results)
    after = [remaining(key) for key in keys]
    assert [b - a for b, a in zip(before, after, strict=True)] == [n + 2 for n in counts]  # + account check + REST call

    # a session opened with one key answers 404 to a request with another key
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    keys = [stack.keys["professional"], stack.keys["professional2"]]
    opened = httpx.post(stack.mcp, json=initialize, headers={**headers, "Authorization": f"Bearer {keys[0]}"})
    session_id = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    other = httpx.post(stack.mcp, json=listing, headers={**headers, "Authorization": f"Bearer {keys[1]}",
                                                         "Mcp-Session-Id": session_id,
                                                         "MCP-Protocol-Version": "2025-06-18"})
    assert other.status_code == 404
