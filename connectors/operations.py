"""The API's operations as the served OpenAPI document describes them, and the checks of their
arguments, made before any request.

Nothing here is typed by hand: names, types, allowed values, bounds, defaults, which field holds
the records, and the rule across fields (`bucket` is required when `group_by` includes `time`) all
come from the document (`Operations.from_openapi`). The reasons given for a bad argument are
worded exactly as the API words them (`{name, reason}`, and the same `detail`), so a caller reads
the same message whether the client or the server refused; tests/connectors/test_client.py holds the two
side by side.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from connectors.columns import heading, level_text
from paramcheck import FieldError, allowed, check_body, check_query, reason, summary

__all__ = ["INVALID_TITLE", "FieldError", "Operation", "Operations", "Parameter", "Plan", "query_text", "summary"]

INVALID_TITLE = "Invalid or missing parameter"  # the title of the API's 400 problem


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One query parameter or body field: its name and JSON Schema, as documented."""

    name: str
    schema: Mapping[str, Any]
    required: bool = False

    @property
    def type(self) -> str:
        return self.schema.get("type", "string")

    @property
    def default(self) -> Any:
        return self.schema.get("default")

    @property
    def enum(self) -> list[Any] | None:
        return self.schema.get("enum")

    @property
    def minimum(self) -> float | None:
        return self.schema.get("minimum")

    @property
    def maximum(self) -> float | None:
        return self.schema.get("maximum")

    @property
    def description(self) -> str:
        return self.schema.get("description", "")

    def allowed(self) -> str:
        return allowed(self.schema)


@dataclasses.dataclass(frozen=True)
class Operation:
    """One endpoint: `name` is its operationId (`top_keywords`), `path` its full path."""

    name: str
    method: str
    path: str
    params: tuple[Parameter, ...]
    in_body: bool
    min_tier: str | None = None
    tool: str | None = None
    records_field: str | None = None
    record_schema: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    rules: tuple[Mapping[str, Any], ...] = ()  # if/then rules across body fields
    path_params: tuple[str, ...] = ()  # names in the path's braces (`webhook_id`)
    tags: tuple[str, ...] = ()  # the document's tags: `signals` (data), `account`, `webhooks`
    columns: tuple[str, ...] = ()  # the records' flat columns, in order (`x-signals-columns`)
    # The document's: how often an interval holds the exact value (`x-signals-interval-level`), and
    # the headings of nested columns (`x-signals-columns`'s, flatcolumns/).
    interval_level: float | None = None
    headings: tuple[Mapping[str, str], ...] = ()
    summary: str = ""  # the document's (`Top keywords`)

    @property
    def is_data(self) -> bool:
        """A data endpoint (tagged `signals`): records a report or an MCP tool is made of; not the
        account or the webhook management."""
        return "signals" in self.tags

    @property
    def chooses_format(self) -> bool:
        """The answer's format is a parameter (`format`: json or csv, /query's body field)."""
        return any(p.name == "format" for p in self.params)

    @property
    def slug(self) -> str:
        """The last part of the path, as users write it: `top-keywords`."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def interval_words(self) -> str:
        """The interval level as people read it ("90 %"), or "" when the document gives none."""
        return level_text(self.interval_level)

    def heading(self, column: str) -> str:
        """A flat column's heading (`previous_suppressions` -> `suppressions, previous period`)."""
        return heading(column, self.headings)

    def param(self, name: str) -> Parameter:
        return next(p for p in self.params if p.name == name)

    def url_path(self, values: Mapping[str, Any]) -> str:
        """The path with its `{name}` parts filled (each value percent-encoded as one segment)."""
        missing = [name for name in self.path_params if values.get(name) in (None, "")]
        if missing:
            raise KeyError(", ".join(missing))
        return self.path.format(**{name: urllib.parse.quote(str(values[name]), safe="") for name in self.path_params})

    @property
    def count_fields(self) -> tuple[str, ...]:
        """The records' counts: their integer fields but the rank (suppressions, unique_users, ...)."""
        props = self.record_schema.get("properties", {})
        return tuple(name for name, schema in props.items() if schema.get("type") == "integer" and name != "rank")

    @property
    def timestamp_fields(self) -> tuple[str, ...]:
        """Record fields that hold ISO 8601 timestamps (`format: date-time`)."""
        props = self.record_schema.get("properties", {})
        return tuple(name for name, schema in props.items() if schema.get("format") == "date-time")

    def check(self, arguments: Mapping[str, Any]) -> tuple[dict[str, str] | dict[str, Any], list[FieldError]]:
        """The request's query parameters (as text) or JSON body, and every problem the API would
        report for it. Arguments that are None are left out (the API then uses its default)."""
        given = {name: value for name, value in arguments.items() if value is not None}
        if self.in_body:
            body = json.loads(json.dumps(given))  # exactly what the API will decode
            return body, self._check_body(body)
        query: dict[str, Any] = {
            name: [query_text(v) for v in value] if isinstance(value, (list, tuple, set)) else query_text(value)
            for name, value in given.items()
        }
        return query, check_query(self.params, query)[1]

    def _check_body(self, body: Mapping[str, Any]) -> list[FieldError]:
        errors = check_body(self.params, body)[1]
        if errors:
            return errors
        for rule in self.rules:
            errors.extend(_check_rule(rule, body, self))
        return errors


def query_text(value: Any) -> str:
    """A Python value as it goes in a query string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return str(int(value))
    return str(value)


def _check_rule(rule: Mapping[str, Any], body: Mapping[str, Any], operation: Operation) -> list[FieldError]:
    """An if/then rule of the body's schema, of the shape the document uses: if <array field>
    contains <value>, then <fields> are required."""
    condition = rule.get("if", {})
    wanted = rule.get("then", {}).get("required", [])
    for field, test in condition.get("properties", {}).items():
        const = test.get("contains", {}).get("const")
        if const is None or const not in (body.get(field) or []):
            return []
        return [FieldError(name, reason("required_when", field=field, value=const,
                                        expected=operation.param(name).allowed()))
                for name in wanted if name not in body]
    return []


@dataclasses.dataclass(frozen=True)
class Plan:
    """One plan as the document lists them (`x-plans`, lowest first): `name` is the slug that
    `x-min-tier` and the account's `plan` use, `label` the name people read."""

    name: str
    label: str
    requests_per_minute: int | None = None

    @classmethod
    def from_openapi(cls, entry: Mapping[str, Any]) -> Plan:
        return cls(entry["plan"], entry.get("label") or entry["plan"], entry.get("requests_per_minute"))


class Operations(Mapping[str, Operation]):
    """The operations of a served OpenAPI document, by operationId. Also found by the last part of
    their path (`top-keywords`), which is how users name them on a command line."""

    def __init__(self, operations: Sequence[Operation], version: str = "",
                 management: Sequence[Operation] = (), plans: Sequence[Plan] = ()) -> None:
        self._by_name = {op.name: op for op in operations}
        self.version = version
        # The account-management operations (webhooks, minting browser tokens): not data, so not in
        # the mapping (no report, no MCP tool), but the client calls them and the dashboard builds
        # forms from them.
        self.management: Mapping[str, Operation] = {op.name: op for op in management}
        # The plans by slug, lowest first (empty for a document without `x-plans`).
        self.plans: Mapping[str, Plan] = {plan.name: plan for plan in plans}

    @classmethod
    def from_openapi(cls, document: Mapping[str, Any]) -> Operations:
        operations, management = [], []
        level = document.get("x-signals-interval-level")
        shared = {"interval_level": level if isinstance(level, int | float) else None,
                  "headings": tuple((document.get("x-signals-columns") or {}).get("headings") or ())}
        for path, methods in document.get("paths", {}).items():
            for method, op in methods.items():
                if not isinstance(op, dict) or "operationId" not in op or "bearerAuth" not in str(op.get("security")):
                    continue
                kind = management if {"webhooks", "tokens"} & set(op.get("tags", ())) else operations
                kind.append(dataclasses.replace(_operation(path, method.upper(), op), **shared))
        plans = [Plan.from_openapi(entry) for entry in document.get("x-plans", ()) if isinstance(entry, dict)]
        return cls(operations, document.get("info", {}).get("version", ""), management, plans)

    def plan_label(self, name: str | None) -> str | None:
        """A plan's label (`analyst` -> the document's label for it); a slug the document does not
        list is returned as it is."""
        plan = self.plans.get(name or "")
        return plan.label if plan is not None else name

    def __getitem__(self, name: str) -> Operation:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def find(self, name: str) -> Operation | None:
        """By operationId (`top_keywords`), path slug (`top-keywords`) or MCP tool name."""
        wanted = name.strip().strip("/").lower()
        for op in self._by_name.values():
            if wanted in (op.name, op.slug, op.tool, op.path.strip("/").lower()):
                return op
        return None

    def suggest(self, name: str) -> str | None:
        slugs = [op.slug for op in self._by_name.values()]
        close = difflib.get_close_matches(name.strip().strip("/").lower().replace("_", "-"), slugs, n=1, cutoff=0.6)
        return close[0] if close else None


def _operation(path: str, method: str, op: Mapping[str, Any]) -> Operation:
    body_schema: Mapping[str, Any] = {}
    if "requestBody" in op:
        body_schema = op["requestBody"]["content"]["application/json"]["schema"]
        required = set(body_schema.get("required", []))
        params = tuple(Parameter(name, schema, name in required) for name, schema in body_schema["properties"].items())
    else:
        params = tuple(Parameter(p["name"], {**p["schema"], "description": p.get("description", "")},
                                 bool(p.get("required"))) for p in op.get("parameters", []) if p.get("in") == "query")
    path_params = tuple(p["name"] for p in op.get("parameters", []) if p.get("in") == "path")
    rules = tuple({"if": body_schema["if"], "then": body_schema["then"]} for _ in [0] if "if" in body_schema)
    responses = op.get("responses", {})
    ok = (responses.get("200") or responses.get("201") or {}).get("content", {}).get("application/json", {}) \
        .get("schema", {})
    records_field, record_schema = None, {}
    for name, schema in ok.get("properties", {}).items():
        if schema.get("type") == "array" and schema.get("items", {}).get("type") == "object":
            records_field, record_schema = name, schema["items"]
            break
    return Operation(name=op["operationId"], method=method, path=path, params=params, in_body="requestBody" in op,
                     min_tier=op.get("x-min-tier"), tool=op.get("x-mcp-tool"), records_field=records_field,
                     record_schema=record_schema, rules=rules, path_params=path_params,
                     tags=tuple(op.get("tags", ())), columns=tuple(op.get("x-signals-columns", ())),
                     summary=op.get("summary", ""))
