"""What an agent reads before it calls the tools: the methodology (what the noise is, what
`beyond_noise` and `intervals` mean, what `as_of` does) and the caller's plan (its rate limit, the
tools it may call and each one's windows, dimensions, levels and limits).

Both are built from what the API publishes, never restated here: the methodology from the OpenAPI
document's own descriptions (its info, the `as_of`, `compare` and `intervals` parameters and the
`beyond_noise` field), the plan from GET /api/v1/account with the key of the caller and, for each
endpoint it allows, that endpoint's parameters in the document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

METHODOLOGY_URI = "signals://methodology"
PLAN_URI = "signals://plan"
_LIMITS = ("type", "enum", "minimum", "maximum", "default", "minItems", "maxItems", "maxLength")

RESOURCES = (
    types.Resource(uri=METHODOLOGY_URI, name="methodology", title="How to read Signals numbers",
                   description="What the privacy noise is, what beyond_noise and intervals mean, what as_of "
                               "does: read before comparing periods or calling a change real.",
                   mime_type="text/markdown"),
    types.Resource(uri=PLAN_URI, name="plan", title="Your plan: tools, windows, dimensions and limits",
                   description="Your key's plan and rate limit, the tools it may call and, for each, the "
                               "accepted windows, dimensions, levels and limits (from GET /api/v1/account "
                               "and the API's OpenAPI document).",
                   mime_type="application/json"),
)


def _operation(document: Mapping[str, Any], operation_id: str) -> Mapping[str, Any] | None:
    for methods in document.get("paths", {}).values():
        for raw in methods.values():
            if isinstance(raw, dict) and raw.get("operationId") == operation_id:
                return raw
    return None


def _parameters(raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """An operation's parameters (query or body) with their accepted values and bounds."""
    if "requestBody" in raw:
        schema = raw["requestBody"]["content"]["application/json"]["schema"]
        fields = schema.get("properties", {})
    else:
        fields = {p["name"]: p["schema"] for p in raw.get("parameters", []) if p.get("in") == "query"}
    out = {}
    for name, schema in fields.items():
        entry = {k: schema[k] for k in _LIMITS if k in schema}
        items = schema.get("items", {})
        if "enum" in items:
            entry["items"] = items["enum"]
        if isinstance(schema.get("properties"), dict):  # an object of lists (query's filters)
            entry["fields"] = sorted(schema["properties"])
        out[name] = entry
    return out


def plan(document: Mapping[str, Any], account: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's plan, its rate limit, and the tools it may call with their parameters' limits."""
    tools = {}
    for endpoint in account.get("endpoints", []):
        raw = _operation(document, endpoint["operation"])
        if raw is None or not raw.get("x-mcp-tool"):
            continue
        tools[raw["x-mcp-tool"]] = {"endpoint": f"{endpoint['method']} {endpoint['path']}",
                                    "parameters": _parameters(raw)}
    windows = sorted({w for t in tools.values() for w in t["parameters"].get("window", {}).get("enum", [])},
                     key=_window_hours)
    return {"plan": account.get("plan"), "plan_label": account.get("plan_label"),
            "requests_per_minute": account.get("requests_per_minute"),
            "key_expires_at": account.get("key_expires_at"), "windows": windows, "tools": tools,
            "disclaimer": account.get("disclaimer")}


def _window_hours(window: str) -> int:
    return int(window[:-1]) * (24 if window.endswith("d") else 1)


def methodology(document: Mapping[str, Any]) -> str:
    """The methodology in the document's own words, as markdown."""
    params = _query_parameters(document)
    beyond = _field_description(document, "beyond_noise")
    interval = _field_description(document, "intervals")
    sections = [
        "# How to read Signals numbers",
        document.get("info", {}).get("description", ""),
        "## The noise\nEvery count is computed from events with each user's contribution capped, then random "
        "noise is added so that no one person can be singled out; cells with too few users are left out "
        "(they are missing, not zero). So every number is an estimate: small numbers are rough, and two "
        "numbers that differ a little may not differ at all.",
        "## Comparing periods: compare=previous_period\n" + params.get("compare", ""),
        "**beyond_noise**: " + beyond + " `true`: the change is too large to be the noise plus the ordinary "
        "ups and downs of a count. `false`: the numbers alone cannot tell a real change from chance. It does "
        "not mean nothing changed: report such a change as within noise, never as a rise or a fall.",
        "## How sure a number is: intervals=true\n" + params.get("intervals", "") + (f" ({interval})" if interval else ""),
        "## Another hour: as_of\n" + params.get("as_of", ""),
        "## Windows\n" + params.get("window", ""),
    ]
    return "\n\n".join(s for s in sections if s.strip())


def _query_parameters(document: Mapping[str, Any]) -> dict[str, str]:
    """The description of each query parameter, as the document first gives it."""
    found: dict[str, str] = {}
    for methods in document.get("paths", {}).values():
        for raw in methods.values():
            for param in raw.get("parameters", []) if isinstance(raw, dict) else []:
                found.setdefault(param["name"], param.get("description", ""))
    return found


def _field_description(document: Mapping[str, Any], name: str) -> str:
    """The first description the document gives a response field of that name (at any depth)."""
    def walk(node: Any) -> str | None:
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping) and isinstance(props.get(name), Mapping) and props[name].get("description"):
                return props[name]["description"]
            for value in node.values():
                found = walk(value)
                if found:
                    return found
        elif isinstance(node, list):
            for value in node:
                found = walk(value)
                if found:
                    return found
        return None
    return walk(document.get("paths", {})) or ""


def contents(uri: str, text: str, mime_type: str) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)])


def plan_json(document: Mapping[str, Any], account: Mapping[str, Any]) -> str:
    return json.dumps(plan(document, account), indent=1, ensure_ascii=False)
