"""Checks of request parameters against their JSON Schema (the subset the API's documents use:
type, enum, minimum, maximum, exclusiveMinimum, minLength, maxLength, pattern, minItems, maxItems,
uniqueItems, items, properties).

Every problem in a request is collected, not just the first, each as `{name, reason}`, so a caller
can fix everything in one go. The checks return the values as checked: integral numbers of integer
fields as `int`, arrays as tuples.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from paramcheck.wording import PATTERN_REASONS, allowed, did_you_mean, enum_hint, number_text, reason, shown

_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_INTEGER = re.compile(r"^[+-]?[0-9]{1,18}$")  # what the API accepts as an integer in a query string


@dataclasses.dataclass(frozen=True)
class FieldError:
    name: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason}


class HugeNumber:
    """A number of a JSON body too large to hold: an integer with more digits than Python converts
    (sys.get_int_max_str_digits, 4300), or a number beyond a float's range (1e400, which Python
    reads as inf). Kept as its text, it is out of every bound and is refused like any number out
    of bounds, with the text that was sent."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        if len(self.text) <= 24:
            return self.text
        return f"{self.text[:12]}... ({len(self.text.lstrip('-'))} digits)"


class Field(Protocol):
    """A query parameter or body field: its name, its JSON Schema and whether it is required."""

    @property
    def name(self) -> str: ...

    @property
    def schema(self) -> Mapping[str, Any]: ...

    @property
    def required(self) -> bool: ...


def check_query(fields: Sequence[Field], query: Mapping[str, str | list[str]]) -> tuple[dict[str, Any], list[FieldError]]:
    """Query-string values (text; a list when repeated) converted to their types, and every problem.
    Only the parameters given are in the values."""
    known = [f.name for f in fields]
    errors = [FieldError(name, did_you_mean(name, known)) for name in query if name not in known]
    values: dict[str, Any] = {}
    for field in fields:
        if field.name not in query:
            if field.required:
                errors.append(FieldError(field.name, reason("required", expected=allowed(field.schema))))
            continue
        text = query[field.name]
        if isinstance(text, list):
            errors.append(FieldError(field.name, reason("repeated")))
            continue
        try:
            values[field.name] = check_text(field.schema, text)
        except ValueError as exc:
            errors.append(FieldError(field.name, str(exc)))
    return values, errors


def check_body(fields: Sequence[Field], body: Any) -> tuple[dict[str, Any], list[FieldError]]:
    """A decoded JSON body (an object) checked field by field, and every problem. Only the fields
    given are in the values."""
    if not isinstance(body, dict):
        return {}, [FieldError("body", reason("not_object_body"))]
    known = [f.name for f in fields]
    errors = [FieldError(name, did_you_mean(name, known, "field")) for name in body if name not in known]
    values: dict[str, Any] = {}
    for field in fields:
        if field.name not in body:
            if field.required:
                errors.append(FieldError(field.name, reason("required", expected=allowed(field.schema))))
            continue
        if body[field.name] is None:  # no field's schema allows null: leave the field out instead
            errors.append(FieldError(field.name, reason("null", expected=allowed(field.schema))))
            continue
        value, problems = check_json(field.schema, body[field.name], field.name)
        errors.extend(problems)
        if not problems:
            values[field.name] = value
    return values, errors


def check_text(schema: Mapping[str, Any], text: str) -> Any:
    """A query-string value converted to the schema's type; ValueError with the reason."""
    kind = schema.get("type")
    if kind == "integer":
        if not _INTEGER.match(text.strip()):
            raise ValueError(reason("invalid", value=shown(text), expected=allowed(schema)))
        return _check_scalar(schema, int(text.strip()))
    if kind == "number":
        try:
            if not _NUMBER.match(text.strip()):
                raise ValueError(text)
            number = float(text.strip())
        except ValueError:
            raise ValueError(reason("invalid", value=shown(text), expected=allowed(schema))) from None
        if not math.isfinite(number):  # 1e400: beyond any bound; said with the text sent, not "inf"
            raise ValueError(reason("out_of_bounds", number=repr(HugeNumber(text.strip())), expected=allowed(schema)))
        return _check_scalar(schema, number)
    if kind == "boolean":
        if text not in ("true", "false"):
            raise ValueError(reason("invalid", value=shown(text), expected=allowed(schema)))
        return text == "true"
    return _check_scalar(schema, text)


def check_json(schema: Mapping[str, Any], value: Any, path: str) -> tuple[Any, list[FieldError]]:
    """A decoded JSON value checked against its schema, recursively: the value and every problem."""
    def fail(why: str) -> tuple[Any, list[FieldError]]:
        return None, [FieldError(path, why)]

    kind = schema.get("type")
    if isinstance(value, HugeNumber):
        return fail(reason("out_of_bounds" if kind in ("integer", "number") else "invalid",
                           number=repr(value), value=shown(value), expected=allowed(schema)))
    if kind == "integer":
        # JSON Schema counts 147.0 as an integer (a number with a zero fractional part), and
        # so do the clients that generate requests from the OpenAPI document.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return fail(reason("invalid", value=shown(value), expected=allowed(schema)))
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return fail(reason("invalid", value=shown(value), expected=allowed(schema)))
    elif kind == "boolean":
        if not isinstance(value, bool):
            return fail(reason("invalid", value=shown(value), expected=allowed(schema)))
        return value, []
    elif kind == "string":
        if not isinstance(value, str):
            return fail(reason("not_string", expected=allowed(schema)))
    elif kind == "array":
        return _check_array(schema, value, path)
    elif kind == "object":
        return _check_object(schema, value, path)
    try:
        return _check_scalar(schema, value), []
    except ValueError as exc:
        return fail(str(exc))


def _check_array(schema: Mapping[str, Any], value: Any, path: str) -> tuple[Any, list[FieldError]]:
    def fail(why: str) -> tuple[Any, list[FieldError]]:
        return None, [FieldError(path, why)]

    if not isinstance(value, list):
        return fail(reason("not_array", expected=allowed(schema)))
    least, most = schema.get("minItems"), schema.get("maxItems")
    if least is not None and len(value) < least:
        return fail(reason("empty_array" if not value else "too_few_items", least=least))
    if most is not None and len(value) > most:
        return fail(reason("too_many_items", count=len(value), most=most))
    checked, errors = [], []
    for index, item in enumerate(value):
        item_value, problems = check_json(schema["items"], item, f"{path}[{index}]")
        checked.append(item_value)
        errors.extend(problems)
    if errors:
        return None, errors
    if schema.get("uniqueItems") and len({_hashable(v) for v in checked}) != len(checked):
        return fail(reason("repeats"))
    return tuple(checked), []


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list, tuple)) else value


def _check_object(schema: Mapping[str, Any], value: Any, path: str) -> tuple[Any, list[FieldError]]:
    if not isinstance(value, dict):
        return None, [FieldError(path, reason("not_object", expected=allowed(schema)))]
    members = schema.get("properties", {})
    errors: list[FieldError] = []
    result: dict[str, Any] = {}
    for key, item in value.items():
        if key not in members:
            errors.append(FieldError(f"{path}.{key}", did_you_mean(key, list(members), "key")))
            continue
        item_value, problems = check_json(members[key], item, f"{path}.{key}")
        errors.extend(problems)
        result[key] = item_value
    return (None, errors) if errors else (result, [])


def _check_scalar(schema: Mapping[str, Any], value: Any) -> Any:
    """Enum, bounds, length and pattern checks shared by query strings and JSON. ValueError on failure."""
    kind = schema.get("type")
    if kind == "number" and isinstance(value, float) and not math.isfinite(value):
        raise ValueError(reason("invalid", value=shown(value), expected=allowed(schema)))
    if kind in ("integer", "number"):
        low, high, above = schema.get("minimum"), schema.get("maximum"), schema.get("exclusiveMinimum")
        if (low is not None and value < low) or (high is not None and value > high) or (
            above is not None and value <= above
        ):
            raise ValueError(reason("out_of_bounds", number=number_text(value), expected=allowed(schema)))
        return value
    if "enum" in schema:
        if value not in schema["enum"]:
            raise ValueError(reason("not_allowed", value=shown(value), hint=enum_hint(value, schema["enum"]),
                                    expected=allowed(schema)))
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON \ud800 escape: not text
        raise ValueError(reason("not_unicode")) from None
    least, most = schema.get("minLength"), schema.get("maxLength")
    if least is not None and len(value) < least:
        raise ValueError(reason("empty") if not value else reason("too_short", expected=allowed(schema)))
    if most is not None and len(value) > most:
        raise ValueError(reason("too_long", count=len(value), expected=allowed(schema)))
    pattern = schema.get("pattern")
    if pattern is not None and not re.search(pattern, value):
        raise ValueError(PATTERN_REASONS.get(pattern) or reason("no_match", pattern=pattern))
    return value
