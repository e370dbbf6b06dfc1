"""The tools (one per data endpoint), built from the served OpenAPI document, and the shape of their results.

Nothing about a parameter is typed here: a tool's input schema is its endpoint's query parameters
(or request body) exactly as the document gives them, names, types, enums, bounds, defaults,
`required` and descriptions included; its output schema is the endpoint's 200 JSON schema (its
record schema inside) with one more member, `privacy` (privacy_notes.py: the disclaimer, the
intervals when asked, the privacy budget), whose value every result carries in its structured
content beside the body; its name is the document's `x-mcp-tool`, its title the operation's
summary; what the measures mean is their description in the record schema. What is written here
is prose for the model (what a call answers, that the numbers are estimates), the annotations
every tool shares (read-only, idempotent, a closed world), and the conversion of an answer or an
API error into a `CallToolResult`.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from connectors import privacy_budget, problems
from connectors.client import Reply, SignalsError, rows_text
from connectors.mcp import privacy_notes
from connectors.operations import Operation, Operations

ESTIMATES = ("Every number is an estimate: aggregated, anonymous statistics with privacy noise, and cells with "
             "too few users are left out, so treat small numbers as rough and never as exact counts. Times are "
             "UTC; the window ends at as_of (the start of the current hour, or the end of the last hour with data). "
             "Read-only. Each call is one request to the Signals REST API with your key, counted against your "
             "plan's rate limit.")

def csv_refusal(operation: Operation) -> str:
    """What a tool whose operation takes a `format` says of CSV: tools answer JSON only."""
    return (f"{operation.tool} answers in JSON only: leave 'format' out or set it to 'json'. For CSV, call "
            f"{operation.method} {operation.path} on the REST API.")


@dataclasses.dataclass(frozen=True)
class ToolSpec:
    name: str
    operation: Operation
    tool: types.Tool


def build_tools(document: Mapping[str, Any]) -> dict[str, ToolSpec]:
    """One tool per operation of the document that names an MCP tool, by tool name."""
    operations = Operations.from_openapi(document)
    specs = {}
    for methods in document.get("paths", {}).values():
        for raw in methods.values():
            if not isinstance(raw, dict) or not raw.get("x-mcp-tool"):
                continue
            operation = operations[raw["operationId"]]
            name = raw["x-mcp-tool"]
            tool = types.Tool(
                name=name,
                title=raw.get("summary"),
                description=describe(raw, operation),
                input_schema=input_schema(raw),
                output_schema=output_schema(raw, operation),
                annotations=tool_annotations(raw),
            )
            specs[name] = ToolSpec(name, operation, tool)
    return specs


def input_schema(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The endpoint's parameters as one JSON Schema object: the request body's schema as it is,
    or the query parameters as properties (each parameter's description inside its schema)."""
    if "requestBody" in raw:
        return copy.deepcopy(dict(raw["requestBody"]["content"]["application/json"]["schema"]))
    properties, required = {}, []
    for param in raw.get("parameters", []):
        if param.get("in") != "query":
            continue
        properties[param["name"]] = {**copy.deepcopy(param["schema"]),
                                     **({"description": param["description"]} if param.get("description") else {})}
        if param.get("required"):
            required.append(param["name"])
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def output_schema(raw: Mapping[str, Any], operation: Operation) -> dict[str, Any]:
    """The endpoint's 200 JSON body schema, and the privacy notes as one more required member
    (privacy_notes.MEMBER). A body that has a member of that name itself is a ValueError: the notes
    must not hide any of it."""
    schema = copy.deepcopy(dict(raw["responses"]["200"]["content"]["application/json"]["schema"]))
    properties = schema.setdefault("properties", {})
    if privacy_notes.MEMBER in properties:
        raise ValueError(f"{operation.method} {operation.path} answers a member {privacy_notes.MEMBER!r} of its own; "
                         "the MCP tool's privacy notes need another name (connectors/mcp/privacy_notes.py)")
    properties[privacy_notes.MEMBER] = privacy_notes.schema(raw, operation)
    schema["required"] = [*schema.get("required", []), privacy_notes.MEMBER]
    return schema


def tool_annotations(raw: Mapping[str, Any]) -> types.ToolAnnotations:
    """What every tool is, for a client deciding whether to ask before calling: it only reads
    (the data endpoints change nothing), asking again has no further effect, and it reaches
    nothing but the Signals API (a closed world); its title is the operation's summary."""
    return types.ToolAnnotations(title=raw.get("summary"), read_only_hint=True, destructive_hint=False,
                                 idempotent_hint=True, open_world_hint=False)


def describe(raw: Mapping[str, Any], operation: Operation) -> str:
    """What the tool answers, for a model: the document's summary and description, the fields of
    its records and what the measures among them mean, and that the numbers are estimates."""
    parts = [raw.get("summary", "").rstrip(".") + ".", raw.get("description", "")]
    if operation.records_field:
        props = operation.record_schema.get("properties", {})
        fields = list(props)
        parts.append(f"Answer: the JSON body of {operation.method} {operation.path}: a list "
                     f"'{operation.records_field}' of records with {', '.join(fields)}, and the request's echo "
                     f"and a disclaimer; in the structured result, beside it, '{privacy_notes.MEMBER}': the "
                     "disclaimer, the intervals when asked for and the privacy budget after the call.")
        meanings = [f"{name} = {schema['description']}" for name, schema in props.items()
                    if schema.get("type") in ("integer", "number") and schema.get("description")]
        if meanings:
            parts.append("Measures: " + "; ".join(meanings) + ".")
    if operation.chooses_format:
        parts.append(csv_refusal(operation))
    parts.append(ESTIMATES)
    return "\n\n".join(p for p in parts if p)


def part_note(operation: Operation, reply: Reply, arguments: Mapping[str, Any]) -> str | None:
    """When the answer holds more rows than this page: "50 of 390 rows", and how to get the rest
    (the next `offset`; for /query, whose later pages are fetched by cursor over REST, a larger limit)."""
    total, shown = reply.total_rows, reply.rows(operation)
    if total is None or total <= shown:
        return None
    start = int(arguments.get("offset") or 0)
    note = f"This answer shows {rows_text(shown, total)}"
    if start:
        note += f" (rows {start + 1} to {start + shown})"
    names = {p.name: p for p in operation.params}
    if "offset" in names:
        return note + f"; call again with offset={start + shown} for the next ones."
    limit = names.get("limit")
    most = f" (at most {limit.maximum:g})" if limit is not None and limit.maximum is not None else ""
    return note + (f", the first by {arguments.get('order_by') or 'suppressions'}; ask with a larger limit{most} "
                   "or narrower filters for more, or page through the REST API (Link rel=\"next\").")


def ok_result(body: Mapping[str, Any], notes: Mapping[str, Any], as_of: dt.datetime | None = None, *,
              stale: bool = False, part: str | None = None) -> types.CallToolResult:
    """The endpoint's JSON body with the privacy `notes` (privacy_notes.notes) beside it as
    structured content, and as text: the body as JSON, a line saying which hour the numbers end at
    (the answer's own as_of; an earlier one when it was served stale while the current answer is
    computed), `part` ("50 of 390 rows ...") when the answer holds more rows than it shows, then
    the notes in words (the intervals when asked; last, the subscription's privacy budget after it,
    so an agent sees what its questions spend)."""
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))]
    if as_of is not None:
        when = as_of.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        note = f"Numbers as of {when} (UTC)."
        if stale:
            note += (" This is the previous hour's answer, served while the current one is computed; "
                     "ask again in a minute for the current hour.")
        content.append(types.TextContent(type="text", text=note))
    if part:
        content.append(types.TextContent(type="text", text=part))
    content += [types.TextContent(type="text", text=line) for line in privacy_notes.lines(notes)]
    return types.CallToolResult(content=content, structured_content={**body, privacy_notes.MEMBER: dict(notes)})


def error_result(problem: Mapping[str, Any], retry_after: int | None = None) -> types.CallToolResult:
    """A failure as a tool error: the problem in the API's shape (connectors/problems.py) as
    structured content, and in words; `retry_after` (a 429's or 503's Retry-After) as one more
    member and a line saying when to retry."""
    body = dict(problem)
    text = problems.text(body)
    if retry_after is not None:
        body["retry_after"] = retry_after
        if privacy_budget.is_refusal(body):
            text += (f"\nThe subscription's privacy budget for the month is spent: it renews in {retry_after} s; "
                     "answers already received can be asked again meanwhile, and narrower questions cost less.")
        elif body.get("status") == 429:
            text += f"\nRate limited: retry in {retry_after} s."
        else:
            text += f"\nRetry in {retry_after} s."
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=body, is_error=True)


def from_signals_error(error: SignalsError) -> types.CallToolResult:
    """The API's problem (or the client's, in the same shape) as a tool error."""
    return error_result(error.problem, error.retry_after)
