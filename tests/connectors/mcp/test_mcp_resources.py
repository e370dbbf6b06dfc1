"""The MCP server's resources (methodology, the caller's plan) and prompts, with the SDK's own
client over streamable HTTP and stdio, against the real API (the stack in tests/connectors/mcp/conftest.py)."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from connectors.mcp.prompts import PROMPTS
from tests.support.mcp_stack import TOOLS, run, session

pytestmark = pytest.mark.process


def document(stack) -> dict:
    return httpx.get(stack.api + "/api/v1/openapi").json()


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_resources_methodology_and_the_callers_plan(stack, transport):
    key = stack.keys["professional"]

    async def go():
        async with session(stack, transport, key) as client:
            listed = (await client.list_resources()).resources
            methodology = (await client.read_resource("signals://methodology")).contents[0]
            plan = (await client.read_resource("signals://plan")).contents[0]
            return listed, methodology, plan

    listed, methodology, plan = run(go())
    assert [str(r.uri) for r in listed] == ["signals://methodology", "signals://plan"]
    assert [r.mime_type for r in listed] == ["text/markdown", "application/json"]
    doc = document(stack)
    geo = doc["paths"]["/api/v1/signals/geo-heat"]["get"]
    described = {p["name"]: p["description"] for p in geo["parameters"]}
    text = methodology.text
    assert methodology.mime_type == "text/markdown" and text.startswith("# How to read Signals numbers")
    for name in ("compare", "intervals", "as_of"):  # the document's own words, not a copy
        assert described[name] in text
    change = geo["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["regions"]["items"]
    beyond = change["properties"]["change"]["properties"]["suppressions"]["properties"]["beyond_noise"]["description"]
    assert f"**beyond_noise**: {beyond}" in text and "within noise" in text

    account = httpx.get(stack.api + "/api/v1/account", headers={"Authorization": f"Bearer {key}"}).json()
    mine = json.loads(plan.text)
    assert (mine["plan"], mine["requests_per_minute"]) == (account["plan"], account["requests_per_minute"]) \
        == ("professional", 300)
    assert sorted(mine["tools"]) == sorted(TOOLS)
    windows = {w for methods in doc["paths"].values() for raw in methods.values() for p in raw.get("parameters", [])
               if p["name"] == "window" for w in p["schema"]["enum"]}
    query = doc["paths"]["/api/v1/signals/query"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    windows |= set(query["properties"]["window"]["enum"])
    assert set(mine["windows"]) == windows and mine["windows"][:4] == ["1h", "6h", "12h", "24h"]
    top = mine["tools"]["signals_top_keywords"]
    assert top["endpoint"] == "GET /api/v1/signals/top-keywords"
    limit = next(p for p in doc["paths"]["/api/v1/signals/top-keywords"]["get"]["parameters"] if p["name"] == "limit")
    assert (top["parameters"]["limit"]["minimum"], top["parameters"]["limit"]["maximum"]) == \
        (limit["schema"]["minimum"], limit["schema"]["maximum"])
    assert mine["tools"]["signals_trending"]["parameters"]["dimension"]["enum"] == ["keyword", "domain", "platform",
                                                                                   "page_context"]
    assert "country" in mine["tools"]["signals_query"]["parameters"]["group_by"]["items"]
    assert "countries" in mine["tools"]["signals_query"]["parameters"]["filters"]["fields"]
    assert key not in plan.text


def test_an_unknown_resource_is_an_error_naming_the_resources(stack):
    async def go():
        async with session(stack, "http", stack.keys["professional"]) as client:
            with pytest.raises(MCPError) as raised:
                await client.read_resource("signals://nope")
            return raised.value

    error = run(go())
    assert "There is no resource 'signals://nope'. Resources: signals://methodology, signals://plan." in str(error)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_prompts_list_and_their_calls_answer(stack, transport):
    """Every prompt, with each value of its arguments, names calls that the tools answer, with
    previous values and beyond_noise where it compares."""
    cases = [("weekly_brief", {"focus": f}) for f in PROMPTS["weekly_brief"].choices["focus"]]
    cases += [("compare_periods", {"window": w, "tool": t}) for w in PROMPTS["compare_periods"].choices["window"]
              for t in PROMPTS["compare_periods"].choices["tool"]]

    async def go():
        async with session(stack, transport, stack.keys["professional"]) as client:
            listed = (await client.list_prompts()).prompts
            out = []
            for name, arguments in cases:
                prompt = await client.get_prompt(name, arguments)
                text = prompt.messages[0].content.text
                calls = [(m[1], json.loads(m[2])) for m in re.finditer(r"^- (\w+) (\{.*\})$", text, re.M)]
                results = [await client.call_tool(tool, args) for tool, args in calls]
                out.append((name, arguments, text, calls, results))
            return listed, out

    listed, out = run(go())
    assert [p.name for p in listed] == ["weekly_brief", "compare_periods"]
    assert listed[0].title == "Weekly brief: what changed beyond noise in the last 7 days"
    compared = 0
    for name, arguments, text, calls, results in out:
        assert calls and "signals://methodology" in text and "within noise" in text
        for (tool, args), result in zip(calls, results, strict=True):
            assert not result.is_error, (name, arguments, tool, result.content[0].text)
            records = [v for v in result.structured_content.values() if isinstance(v, list) and (not v or isinstance(v[0], dict))]
            if args.get("compare") and records[-1]:  # a short window may have no published cell
                assert "beyond_noise" in json.dumps(records[-1][0]["change"]), (name, tool)
                compared += 1
    assert compared >= len(cases) // 2
    brief = out[0][2]
    assert brief.startswith("Weekly brief: what changed beyond noise in the last 7 days, by keywords.")
    assert '- signals_top_keywords {"window": "7d", "limit": 25, "compare": "previous_period"}' in brief


def test_prompt_arguments_are_checked(stack):
    async def go():
        async with session(stack, "http", stack.keys["professional"]) as client:
            errors = []
            for name, arguments in (("weekly_brief", {"focus": "planets"}), ("compare_periods", {"window": "2d"}),
                                    ("compare_periods", {"windw": "7d"}), ("nope", {})):
                with pytest.raises(MCPError) as raised:
                    await client.get_prompt(name, arguments)
                errors.append(str(raised.value))
            return errors

    errors = run(go())
    assert "focus: 'planets' is not one of keywords, countries, domains" in errors[0]
    assert "window: '2d' is not one of 24h, 1h, 6h, 12h, 7d, 30d" in errors[1]
    assert "unknown argument(s) windw; compare_periods takes window, tool" in errors[2]
    assert "There is no prompt 'nope'. Prompts: weekly_brief, compare_periods." in errors[3]
