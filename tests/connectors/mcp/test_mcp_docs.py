"""The agent user's page (docs/mcp.md) matches the server: the tool table names exactly the tools (one
per data endpoint of the operation table, service/api/endpoints.py), each with its endpoint, the client
configurations are valid JSON that start this module or reach its HTTP path and port, and
the settings it reads are the ones documented. No processes: the tools are built from the
service's own OpenAPI document."""

from __future__ import annotations

import dataclasses
import json
import re

import jsonschema
import pytest

from connectors.mcp import privacy_notes
from connectors.mcp.tools import build_tools
from connectors.settings import DEFAULT_MCP_PORT as DEFAULT_PORT
from connectors.settings import ConnectorSettings
from service.api.endpoints import ENDPOINTS
from service.api.openapi import build_openapi
from tests.support.processes import ROOT

TOOLS = {endpoint.tool: endpoint for endpoint in ENDPOINTS}  # the table's: one per data endpoint


def page() -> str:
    return (ROOT / "docs" / "mcp.md").read_text()


def test_the_document_gives_exactly_the_tables_tools_read_only_with_schemas():
    tools = build_tools(build_openapi())
    assert set(tools) == set(TOOLS)
    for spec in tools.values():
        assert spec.tool.annotations.read_only_hint is True
        assert spec.tool.input_schema["type"] == "object" and spec.tool.output_schema["type"] == "object"
        assert "estimate" in spec.tool.description


def tool_rows(text: str) -> list[tuple[str, str, str]]:
    """The page's tool table: (tool, method, path) of each row."""
    return re.findall(r"^\| `(signals_\w+)` \| `([A-Z]+) (/[\w-]+)` \|", text, re.M)


def missing_tool_rows(text: str) -> list[str]:
    """The tools of the table that the page's tool table lacks, or gives with another endpoint."""
    rows = {name: (method, path) for name, method, path in tool_rows(text)}
    return [tool for tool, endpoint in TOOLS.items() if rows.get(tool) != (endpoint.method, endpoint.path)]


def test_the_page_names_every_tool_with_its_endpoint_and_no_other():
    rows = tool_rows(page())
    assert missing_tool_rows(page()) == [], "tools without their row in docs/mcp.md's table"
    assert len(rows) == len({name for name, _, _ in rows}) == len(TOOLS), [name for name, _, _ in rows]


@pytest.mark.parametrize("tool", TOOLS)
def test_a_tool_whose_row_is_missing_is_named(tool):
    without = "\n".join(line for line in page().splitlines() if not line.startswith(f"| `{tool}` |"))
    assert set(missing_tool_rows(without)) - set(missing_tool_rows(page())) == {tool}


def json_blocks() -> list:
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", page(), re.S)]


def test_the_page_client_configurations():
    stdio, http = (b["mcpServers"]["signals"] for b in json_blocks() if "mcpServers" in b)
    assert stdio["args"] == ["-m", "connectors.mcp"] and set(stdio["env"]) == {"SIGNALS_API_URL", "SIGNALS_API_KEY"}
    assert http["url"] == f"http://127.0.0.1:{DEFAULT_PORT}/mcp"
    assert http["headers"]["Authorization"].startswith("Bearer ")


def test_every_setting_the_server_reads_is_documented():
    source = "".join(p.read_text() for p in (ROOT / "connectors" / "mcp").glob("*.py"))
    assert set(re.findall(r'"(SIGNALS_[A-Z_]+)"', source)) == set()  # connectors/settings.py reads them all
    read = {field.metadata["env"] for field in dataclasses.fields(ConnectorSettings) if field.name.startswith("mcp_")}
    assert read == {"SIGNALS_MCP_HOST", "SIGNALS_MCP_PORT"}
    for name in read | {"SIGNALS_API_URL", "SIGNALS_API_KEY"}:
        assert f"`{name}`" in page(), name


def test_the_page_tables_name_the_resources_and_prompts():
    from connectors.mcp.prompts import PROMPTS
    from connectors.mcp.resources import RESOURCES

    text = page()
    assert [(uri, kind.lower()) for uri, kind in re.findall(r"^\| `(signals://\w+)` \((\w+)\) \|", text, re.M)] == [
        (str(r.uri), r.mime_type.split("/")[1]) for r in RESOURCES]
    rows = re.findall(r"^\| `(\w+)` \| (.*?) \|", text, re.M)
    prompts = {name: arguments for name, arguments in rows if name in PROMPTS}
    assert list(prompts) == list(PROMPTS)
    for name, arguments in prompts.items():
        for argument, values in PROMPTS[name].choices.items():
            default = (f"`{values[0]}` (default", f"`{values[0]}` default")
            assert f"`{argument}`" in arguments and any(d in arguments for d in default), (name, argument)


def test_the_pages_structured_content_is_what_the_tool_returns():
    """The example of "What an agent gets" validates against its tool's output schema (the body
    and every note, intervals included), and the table of `privacy` names exactly its members."""
    text = page()
    example = next(b for b in json_blocks() if privacy_notes.MEMBER in b)
    call = re.search(r"^`(signals_\w+)` with `(\{.*?\})`", text, re.M)
    assert call is not None, "the example names its tool and arguments"
    tool = build_tools(build_openapi())[call[1]].tool
    jsonschema.validate(example, tool.output_schema)
    arguments = json.loads(call[2])
    assert set(example[privacy_notes.MEMBER]) == {"disclaimer", "budget"} | ({"intervals"} if arguments.get("intervals")
                                                                            else set())
    assert len(example[TOOLS[call[1]].records_field]) == arguments["limit"]
    rows = re.findall(r"^\| `(\w+)` \| ", text[text.index("| member of `privacy` |"):], re.M)
    notes = tool.output_schema["properties"][privacy_notes.MEMBER]["properties"]
    assert rows[:len(notes)] == list(notes)
    budget = example[privacy_notes.MEMBER]["budget"]
    assert budget["remaining"] == budget["limit"] - budget["spent"]


def test_the_page_names_the_annotations_and_the_versions():
    from tests.connectors.mcp.protocol import VERSIONS

    text = page()
    tool = next(iter(build_tools(build_openapi()).values())).tool
    for name, value in tool.annotations.model_dump(by_alias=True, exclude_none=True).items():
        if name != "title":
            assert f"`{name}: {json.dumps(value)}`" in text, name
    for version in VERSIONS:
        assert f"**{version}**" in text, version
