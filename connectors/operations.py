"""The API's operations as the served OpenAPI document describes them, and the checks of their
arguments, made before any request.

Nothing here is typed by hand: names, types, allowed values, bounds, defaults, which field holds
the records, and the rule across fields (`bucket` is required when `group_by` includes `time`) all
come from the document (`Operations.from_openapi`). The reasons given for a bad argument are
worded exactly as the API words them (`{name, reason}`, and the same `detail`), so a caller reads
the same message whether the client or the server refused; tests/test_client.py holds the two
side by side.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_INTEGER = re.compile(r"^[+-]?[0-9]{1,18}$")  # what the API accepts as an integer in a query string

INVALID_TITLE = "Invalid or missing parameter"  # the title of the API's 400 problem


@dataclasses.dataclass(frozen=True)
class FieldError:
    name: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason}


def summary(errors: Sequence[FieldError]) -> str:
    """The `detail` the API gives for these errors."""
    if len(errors) == 1:
        return f"Parameter '{errors[0].name}' {errors[0].reason}."
    return f"{len(errors)} parameters are invalid: " + ", ".join(f"'{e.name}'" for e in errors) + ". See errors."


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

    @property
    def slug(self) -> str:
        """The last part of the path, as users write it: `top-keywords`."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def param(self, name: str) -> Parameter:
        return next(p for p in self.params if p.name == name)

    def url_path(self, values: Mapping[str, Any]) -> str:
        """The path with its `{name}` parts filled (each value percent-encoded as one segment)."""
        missing = [name for name in self.path_params if values.get(name) in (None, "")]
        if missing:
            raise KeyError(", ".join(missing))
        return self.path.format(**{name: urllib.parse.quote(str(values[name]), safe="") for name in self.path_params})

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
        return query, _unknown(query, self.params, "parameter") + self._check_query(query)

    def _check_query(self, query: Mapping[str, Any]) -> list[FieldError]:
        errors = []
        for param in self.params:
            if param.name not in query:
                if param.required:
                    errors.append(FieldError(param.name, f"is required; expected {param.allowed()}"))
                continue
            if isinstance(query[param.name], list):
                errors.append(FieldError(param.name, "must be given once; it was repeated"))
                continue
            try:
                _check_text(param.schema, query[param.name])
            except ValueError as exc:
                errors.append(FieldError(param.name, str(exc)))
        return errors

    def _check_body(self, body: Mapping[str, Any]) -> list[FieldError]:
        errors = _unknown(body, self.params, "field")
        for param in self.params:
            if param.name not in body:
                if param.required:
                    errors.append(FieldError(param.name, f"is required; expected {param.allowed()}"))
                continue
            errors.extend(_check_json(param.schema, body[param.name], param.name))
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


def _unknown(given: Mapping[str, Any], params: Sequence[Parameter], word: str) -> list[FieldError]:
    known = [p.name for p in params]
    return [FieldError(name, did_you_mean(name, known).replace("parameter", word)) for name in given if name not in known]


def did_you_mean(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"unknown parameter.{hint} Known parameters: {', '.join(known) or 'none'}"


def allowed(schema: Mapping[str, Any]) -> str:
    """What the schema allows, in the API's words."""
    kind = schema.get("type")
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if kind == "boolean":
        return "true or false"
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        above = schema.get("exclusiveMinimum")
        if above is not None:
            return f"{noun} greater than {_num(above)}" + (f" and at most {_num(high)}" if high is not None else "")
        if low is not None and high is not None:
            return f"{noun} from {_num(low)} to {_num(high)}"
        if low is not None:
            return f"{noun} of at least {_num(low)}"
        return noun
    if kind == "string":
        if "maxLength" in schema:
            return f"a string of {schema.get('minLength') or 1} to {schema['maxLength']} characters"
        return "a string"
    if kind == "array":
        inner = allowed(schema["items"]) if "items" in schema else "values"
        return f"an array of at most {schema.get('maxItems')} items, each {inner}"
    if kind == "object" and "properties" in schema:
        return "an object with the optional keys " + ", ".join(schema["properties"])
    return str(kind)


def _num(value: float) -> str:
    """A number as the messages show it: integral ones without '.0', very long ones cut short."""
    text = str(value) if isinstance(value, int) else (str(int(value)) if value.is_integer() else str(value))
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text.lstrip('-'))} digits)"


def _check_text(schema: Mapping[str, Any], text: str) -> Any:
    """A query-string value converted to the schema's type; ValueError with the API's reason."""
    kind = schema.get("type")
    if kind == "integer":
        if not _INTEGER.match(text.strip()):
            raise ValueError(f"{text!r} is not valid; expected {allowed(schema)}")
        return _check_scalar(schema, int(text.strip()))
    if kind == "number":
        try:
            if not _NUMBER.match(text.strip()):
                raise ValueError(text)
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not valid; expected {allowed(schema)}") from None
        return _check_scalar(schema, number)
    if kind == "boolean":
        if text not in ("true", "false"):
            raise ValueError(f"{text!r} is not valid; expected {allowed(schema)}")
        return text == "true"
    return _check_scalar(schema, text)


def _check_json(schema: Mapping[str, Any], value: Any, path: str) -> list[FieldError]:
    """Every problem of a decoded JSON value against its schema, recursively."""
    def fail(reason: str) -> list[FieldError]:
        return [FieldError(path, reason)]

    kind = schema.get("type")
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return fail(f"{value!r} is not valid; expected {allowed(schema)}")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return fail(f"{value!r} is not valid; expected {allowed(schema)}")
    elif kind == "boolean":
        return [] if isinstance(value, bool) else fail(f"{value!r} is not valid; expected {allowed(schema)}")
    elif kind == "string":
        if not isinstance(value, str):
            return fail(f"must be a string; expected {allowed(schema)}")
    elif kind == "array":
        if not isinstance(value, list):
            return fail(f"must be an array; expected {allowed(schema)}")
        least, most = schema.get("minItems"), schema.get("maxItems")
        if least is not None and len(value) < least:
            return fail(f"must have at least {least} item(s); it is empty" if not value
                        else f"must have at least {least} items")
        if most is not None and len(value) > most:
            return fail(f"has {len(value)} items; at most {most} are allowed")
        errors = [e for index, item in enumerate(value) for e in _check_json(schema["items"], item, f"{path}[{index}]")]
        if errors:
            return errors
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            return fail("must not repeat a value")
        return []
    elif kind == "object":
        if not isinstance(value, dict):
            return fail(f"must be an object; expected {allowed(schema)}")
        members = schema.get("properties", {})
        errors = []
        for key, item in value.items():
            if key not in members:
                errors.append(FieldError(f"{path}.{key}", did_you_mean(key, list(members)).replace("parameter", "key")))
            else:
                errors.extend(_check_json(members[key], item, f"{path}.{key}"))
        return errors
    try:
        _check_scalar(schema, value)
    except ValueError as exc:
        return fail(str(exc))
    return []


def _check_scalar(schema: Mapping[str, Any], value: Any) -> Any:
    kind = schema.get("type")
    if kind == "number" and isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not valid; expected {allowed(schema)}")
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"{_num(value)} is out of bounds; expected {allowed(schema)}")
        return value
    if "enum" in schema:
        if value not in schema["enum"]:
            close = difflib.get_close_matches(str(value).lower(), schema["enum"], n=1, cutoff=0.5)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(f"{value!r} is not allowed{hint}; expected {allowed(schema)}")
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid Unicode text") from None
    least, most = schema.get("minLength"), schema.get("maxLength")
    if least is not None and len(value) < least:
        raise ValueError("must not be empty" if not value else f"is too short; expected {allowed(schema)}")
    if most is not None and len(value) > most:
        raise ValueError(f"is {len(value)} characters long; expected {allowed(schema)}")
    pattern = schema.get("pattern")
    if pattern is not None and not re.search(pattern, value):
        # The document's one pattern is "has a character that is not white space".
        raise ValueError("must not be blank (white space only)" if not re.search(pattern, " ") and re.search(pattern, "a")
                         else f"does not match the pattern {pattern}")
    return value


def _check_rule(rule: Mapping[str, Any], body: Mapping[str, Any], operation: Operation) -> list[FieldError]:
    """An if/then rule of the body's schema, of the shape the document uses: if <array field>
    contains <value>, then <fields> are required."""
    condition = rule.get("if", {})
    wanted = rule.get("then", {}).get("required", [])
    for field, test in condition.get("properties", {}).items():
        const = test.get("contains", {}).get("const")
        if const is None or const not in (body.get(field) or []):
            return []
        return [FieldError(name, f"is required when {field} includes {const}; expected {operation.param(name).allowed()}")
                for name in wanted if name not in body]
    return []


class Operations(Mapping[str, Operation]):
    """The operations of a served OpenAPI document, by operationId. Also found by the last part of
    their path (`top-keywords`), which is how users name them on a command line."""

    def __init__(self, operations: Sequence[Operation], version: str = "",
                 management: Sequence[Operation] = ()) -> None:
        self._by_name = {op.name: op for op in operations}
        self.version = version
        # The account-management operations (webhooks): not data, so not in the mapping (no
        # report, no MCP tool), but the client calls them and the dashboard builds forms from them.
        self.management: Mapping[str, Operation] = {op.name: op for op in management}

    @classmethod
    def from_openapi(cls, document: Mapping[str, Any]) -> Operations:
        operations, management = [], []
        for path, methods in document.get("paths", {}).items():
            for method, op in methods.items():
                if not isinstance(op, dict) or "operationId" not in op or "bearerAuth" not in str(op.get("security")):
                    continue
                kind = management if "webhooks" in op.get("tags", ()) else operations
                kind.append(_operation(path, method.upper(), op))
        return cls(operations, document.get("info", {}).get("version", ""), management)

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
                     record_schema=record_schema, rules=rules, path_params=path_params)
