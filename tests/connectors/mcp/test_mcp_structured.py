"""What a tool call returns, at every protocol revision the server serves (2025-06-18, 2025-11-25
and the stateless 2026-07-28), with the SDK's own client in process (tests/connectors/mcp/protocol.py):
every tool's outputSchema is a valid JSON Schema, the endpoint's body schema and the privacy notes;
its structuredContent validates against it and is the REST body plus the notes (the disclaimer,
the intervals when asked, the privacy budget of the answer's header); its annotations say it only
reads. The server runs in process (the loop stdio serves) against the real API served from a
thread; over HTTP and stdio for real: test_mcp.py."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from collections.abc import Iterator

import httpx
import jsonschema
import pytest

from cache import LocalGate
from connectors import privacy_budget
from connectors.mcp import privacy_notes
from connectors.mcp.server import Backend, build_server
from connectors.mcp.tools import build_tools
from service.accounts import AccountStore
from service.api.endpoints import ENDPOINTS
from service.api.openapi import build_openapi
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from tests.connectors.mcp.protocol import VERSIONS, speaking
from tests.support.api_server import Ticker, serve
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.mcp_stack import TOOLS

CALLS = {endpoint.tool: dict(endpoint.example) for endpoint in ENDPOINTS}  # the table's example of each
RECORDS = {endpoint.tool: endpoint.records_field for endpoint in ENDPOINTS}
BUDGET = 1e6


def operation_entry(document: dict, tool: str) -> dict:
    method, path = TOOLS[tool]
    return document["paths"][path][method.lower()]


def body_schema(document: dict, tool: str) -> dict:
    return operation_entry(document, tool)["responses"]["200"]["content"]["application/json"]["schema"]


def without_notes(structured: dict) -> dict:
    return {name: value for name, value in structured.items() if name != privacy_notes.MEMBER}


@dataclasses.dataclass
class Api:
    url: str
    accounts: AccountStore

    def key(self) -> str:
        """A Professional key on a subscription of its own (its own rate limit and budget)."""
        return self.accounts.create_key(Tier.PROFESSIONAL)[0]

    def rest(self, key: str, tool: str, arguments: dict) -> httpx.Response:
        method, path = TOOLS[tool]
        headers = {"Authorization": f"Bearer {key}"}
        if method == "POST":
            return httpx.post(self.url + path, json=arguments, headers=headers, timeout=30)
        params = {k: ("true" if v is True else v) for k, v in arguments.items()}
        return httpx.get(self.url + path, params=params, headers=headers, timeout=30)


def _api(fixture_data_dir, fixture_store, accounts, budget: float) -> Iterator[Api]:
    app = create_app(Settings(data_dir=fixture_data_dir, secret="mcp-structured", privacy_budget=budget),
                     clock=FixedClock(FIXTURE_NOW), store=fixture_store, accounts=accounts, gate=LocalGate(clock=Ticker()))
    with serve(app) as url:
        yield Api(url, accounts)


@pytest.fixture(scope="module")
def api(fixture_data_dir, fixture_store, accounts):
    """The API with the real privacy stage and a budget (every answer has its header), from a thread."""
    yield from _api(fixture_data_dir, fixture_store, accounts, BUDGET)


@pytest.fixture(scope="module")
def document(api):
    return httpx.get(api.url + "/api/v1/openapi", timeout=30).json()


def calls(api: Api, key: str, version: str, wanted: dict[str, dict]):
    """The tool list and the results of `wanted` (tool -> arguments), at `version`, in process."""
    server = build_server(Backend(api.url), stdio_key=key)

    async def go():
        async with speaking(version, server) as session:
            tools = (await session.list_tools()).tools
            return tools, {name: await session.call_tool(name, arguments) for name, arguments in wanted.items()}

    return asyncio.run(go())


# -- the tool list ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_every_tool_has_an_output_schema_the_body_and_the_notes_and_annotations(api, document, version):
    tools, _ = calls(api, api.key(), version, {})
    assert sorted(t.name for t in tools) == sorted(TOOLS)
    for tool in tools:
        schema = tool.output_schema
        jsonschema.validators.validator_for(schema).check_schema(schema)  # a valid JSON Schema
        assert schema["type"] == "object" and privacy_notes.MEMBER in schema["required"]
        notes = schema["properties"][privacy_notes.MEMBER]
        body = copy.deepcopy(schema)
        del body["properties"][privacy_notes.MEMBER]
        body["required"].remove(privacy_notes.MEMBER)
        assert body == body_schema(document, tool.name), tool.name  # the record schemas, as served
        assert set(notes["properties"]) == {"disclaimer", "budget"} | (
            {"intervals"} if "intervals" in tool.input_schema["properties"] else set()), tool.name
        summary = operation_entry(document, tool.name)["summary"]
        assert tool.title == summary
        annotations = tool.annotations
        assert (annotations.read_only_hint, annotations.idempotent_hint, annotations.open_world_hint,
                annotations.destructive_hint, annotations.title) == (True, True, False, False, summary), tool.name


def test_the_interval_counts_are_the_record_schemas():
    tools = build_tools(build_openapi())
    document = build_openapi()
    for name, spec in tools.items():
        notes = spec.tool.output_schema["properties"][privacy_notes.MEMBER]["properties"]
        record = body_schema(document, name)["properties"][RECORDS[name]]["items"]["properties"]
        if "intervals" in record:
            assert notes["intervals"]["properties"]["counts"]["items"]["enum"] == list(record["intervals"]["properties"])
        else:
            assert "intervals" not in notes, name


def test_a_body_with_a_member_named_like_the_notes_is_refused():
    document = build_openapi()
    entry = operation_entry(document, "signals_geo_heat")
    body = entry["responses"]["200"]["content"]["application/json"]["schema"]
    body["properties"][privacy_notes.MEMBER] = {"type": "string"}
    with pytest.raises(ValueError, match=f"answers a member '{privacy_notes.MEMBER}' of its own"):
        build_tools(document)


def test_every_budget_member_is_described():
    fields = [f.name for f in dataclasses.fields(privacy_budget.PrivacyBudget)]
    assert list(privacy_notes.BUDGET_MEMBERS) == fields


# -- the results ----------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_every_tool_answers_the_rest_body_and_the_notes(api, version):
    key = api.key()
    tools, results = calls(api, key, version, CALLS)
    schemas = {tool.name: tool.output_schema for tool in tools}
    for name, result in results.items():
        assert not result.is_error, (name, result.content)
        structured = result.structured_content
        jsonschema.validate(structured, schemas[name])  # as the SDK's client also checks
        rest = api.rest(key, name, CALLS[name])  # after the tool call: the same answer, already paid for
        assert rest.status_code == 200, rest.text
        assert without_notes(structured) == rest.json(), name
        assert json.loads(result.content[0].text) == rest.json(), name
        notes = structured[privacy_notes.MEMBER]
        assert notes["disclaimer"] == rest.json()["disclaimer"] and notes["disclaimer"]
        assert "intervals" not in notes, name  # not asked
        budget = notes["budget"]
        line = privacy_budget.PrivacyBudget(**budget).text()
        assert result.content[-1].text == line[0].upper() + line[1:] + "."
    # each answer's own header: the month's total rising by what each answer cost, up to what the
    # REST answers (all of them already received, so free) say after them
    budgets = [results[name].structured_content[privacy_notes.MEMBER]["budget"] for name in CALLS]
    spent = 0.0
    for budget in budgets:
        spent += budget["charged"]
        assert budget["spent"] == pytest.approx(spent, abs=0.01) and budget["limit"] == BUDGET
        assert budget["remaining"] == pytest.approx(BUDGET - budget["spent"], abs=0.01)
    assert budgets[-1]["spent"] > 0
    after = privacy_budget.read(api.rest(key, "signals_top_keywords", CALLS["signals_top_keywords"]).headers)
    assert after is not None and after.charged == 0
    assert (budgets[-1]["spent"], budgets[-1]["remaining"], budgets[-1]["renews"]) == \
        (after.spent, after.remaining, after.renews)


@pytest.mark.parametrize("version", VERSIONS)
def test_intervals_when_asked_are_in_the_notes_and_the_records(api, version):
    key = api.key()
    asked = {"signals_geo_heat": {"window": "7d", "level": "country", "intervals": True},
             "signals_query": {"window": "7d", "group_by": ["keyword"], "intervals": True, "limit": 5}}
    tools, results = calls(api, key, version, {**asked, "signals_top_keywords": {"window": "7d", "intervals": False}})
    schemas = {tool.name: tool.output_schema for tool in tools}
    document = build_openapi()
    for name, arguments in asked.items():
        result = results[name]
        assert not result.is_error, (name, result.content)
        jsonschema.validate(result.structured_content, schemas[name])
        notes = result.structured_content[privacy_notes.MEMBER]
        counts = list(body_schema(document, name)["properties"][RECORDS[name]]["items"]["properties"]["intervals"]
                      ["properties"])
        assert notes["intervals"] == {"level": document["x-signals-interval-level"], "counts": counts}
        records = result.structured_content[RECORDS[name]]
        assert records and all(list(record["intervals"]) == counts for record in records), name
        assert without_notes(result.structured_content) == api.rest(key, name, arguments).json(), name
        assert f"Intervals: each record's `intervals` gives [low, high] for {', '.join(counts)}, a range that " \
               "holds the exact value about 90 % of the time." in [c.text for c in result.content]
    plain = results["signals_top_keywords"].structured_content
    assert "intervals" not in plain[privacy_notes.MEMBER] and "intervals" not in plain["keywords"][0]


@pytest.mark.parametrize("version", VERSIONS)
def test_errors_are_tool_errors_with_the_problem(api, version):
    _, results = calls(api, api.key(), version, {"signals_top_keywords": {"window": "2h"},
                                                 "signals_query": {"window": "7d", "format": "csv"}})
    for name, result in results.items():
        assert result.is_error, name
        problem = result.structured_content
        assert problem["status"] == 400 and privacy_notes.MEMBER not in problem
        assert [e["name"] for e in problem["errors"]] == [{"signals_top_keywords": "window",
                                                           "signals_query": "format"}[name]]


def test_without_a_budget_the_budget_is_null(fixture_data_dir, fixture_store, accounts):
    for api in _api(fixture_data_dir, fixture_store, accounts, 0):  # 0: the deployment has no budget
        tools, results = calls(api, api.key(), VERSIONS[-1], {"signals_trending": CALLS["signals_trending"]})
        result = results["signals_trending"]
        assert not result.is_error, result.content
        assert result.structured_content[privacy_notes.MEMBER]["budget"] is None
        jsonschema.validate(result.structured_content, tools[[t.name for t in tools].index("signals_trending")].output_schema)
        assert not any(c.text.startswith("Privacy budget") for c in result.content)
