"""The tool list, pinned (as modelcontextprotocol/servers pins its git server's): snapshots/tools_list.json
is `tools/list` as the server answers it (the wire's names: inputSchema, outputSchema, annotations),
built from the service's own OpenAPI document, so any change to a tool's name, title, description,
input or output schema or annotations shows in review as a change of that file. After a change
you mean, rewrite it and read the diff:

    .venv/bin/python -m tests.connectors.mcp.test_mcp_snapshot

That the served list at each protocol revision is this one: test_mcp.py (over HTTP)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from connectors.mcp import privacy_notes
from connectors.mcp.tools import build_tools
from service.api.openapi import build_openapi

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list.json"
REWRITE = ".venv/bin/python -m tests.connectors.mcp.test_mcp_snapshot"


def tools_list() -> dict[str, Any]:
    """`tools/list`'s tools as JSON (by the protocol's names), as every revision's result holds them."""
    tools = [spec.tool for spec in build_tools(build_openapi()).values()]
    return {"tools": [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]}


def pinned() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text())


def test_the_tool_list_is_the_pinned_one():
    current, pinned_list = tools_list(), pinned()
    changed = [tool["name"] for tool, old in zip(current["tools"], pinned_list["tools"], strict=False) if tool != old]
    names = [tool["name"] for tool in current["tools"]], [tool["name"] for tool in pinned_list["tools"]]
    assert names[0] == names[1], f"the tools changed: {names[1]} -> {names[0]}; rewrite with {REWRITE}"
    assert current == pinned_list, f"tools/list changed for {', '.join(changed)}: review, then rewrite with {REWRITE}"


def test_the_pinned_list_shows_output_schemas_and_annotations():
    for tool in pinned()["tools"]:
        assert tool["title"] and tool["inputSchema"]["type"] == "object"
        output = tool["outputSchema"]
        assert output["type"] == "object" and privacy_notes.MEMBER in output["required"]
        assert set(output["properties"][privacy_notes.MEMBER]["properties"]) >= {"disclaimer", "budget"}
        assert tool["annotations"] == {"title": tool["title"], "readOnlyHint": True, "destructiveHint": False,
                                       "idempotentHint": True, "openWorldHint": False}


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(tools_list(), indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {SNAPSHOT}")
