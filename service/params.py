"""Declarative parameters: one `Param` describes a query parameter or body field once, and that
description drives validation, the OpenAPI document, the client and the MCP tool schemas.

Validation collects every problem in a request (not just the first) and reports each as
`{name, reason}` with the allowed values or bounds, so a caller can fix everything in one go.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_INTEGER = re.compile(r"^[+-]?[0-9]{1,18}$")

# "Has a character that is not white space", read alike by JSON Schema's `pattern` (ECMA 262) and
# Python's `re`: the class lists exactly what `str.isspace()` counts as white space (ECMA's own
# `\s` differs: it adds U+FEFF and lacks U+001C..U+001F and U+0085). A keyword normalises to ''
# exactly when it has no such character.
NOT_BLANK_PATTERN = r"[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_NOT_BLANK = re.compile(NOT_BLANK_PATTERN)


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    type: str  # "string" | "integer" | "number" | "boolean" | "array" | "object"
    description: str
    required: bool = False
    default: Any = None
    enum: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    items: Param | None = None  # arrays: the element
    properties: tuple[Param, ...] | None = None  # objects: the allowed keys (all optional)
    # Strings: lengths (and not_blank) apply to the value as sent, as the schema says; `normalise`
    # then gives the value that is matched (it may be longer, or empty: it then matches nothing).
    normalise: Callable[[str], str] | None = None
    not_blank: bool = False  # strings: white space alone is refused
    format: str | None = None  # JSON Schema `format` (documentation: `date-time`)

    def json_schema(self) -> dict[str, Any]:
        """JSON Schema (2020-12, as used by OpenAPI 3.1) of this parameter."""
        schema: dict[str, Any] = {"type": self.type}
        if self.description:
            schema["description"] = self.description
        if self.format is not None:
            schema["format"] = self.format
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        for key, value in (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("minItems", self.min_items),
            ("maxItems", self.max_items),
        ):
            if value is not None:
                schema[key] = int(value) if self.type == "integer" and key in ("minimum", "maximum") else value
        if self.not_blank:
            schema["pattern"] = NOT_BLANK_PATTERN
        if self.unique_items:
            schema["uniqueItems"] = True
        if self.items is not None:
            schema["items"] = self.items.json_schema()
        if self.properties is not None:
            schema["properties"] = {p.name: p.json_schema() for p in self.properties}
            schema["additionalProperties"] = False
        if self.default is not None:
            schema["default"] = list(self.default) if isinstance(self.default, tuple) else self.default
        return schema

    def allowed(self) -> str:
        """A short human description of what is allowed, for error messages."""
        if self.enum is not None:
            return "one of " + ", ".join(self.enum)
        if self.type == "boolean":
            return "true or false"
        if self.type in ("integer", "number"):
            kind = "an integer" if self.type == "integer" else "a number"
            if self.minimum is not None and self.maximum is not None:
                return f"{kind} from {_num(self.minimum)} to {_num(self.maximum)}"
            if self.minimum is not None:
                return f"{kind} of at least {_num(self.minimum)}"
            return kind
        if self.type == "string":
            if self.max_length is not None:
                return f"a string of {self.min_length or 1} to {self.max_length} characters"
            return "a string"
        if self.type == "array":
            inner = self.items.allowed() if self.items else "values"
            return f"an array of at most {self.max_items} items, each {inner}"
        if self.type == "object" and self.properties is not None:
            return "an object with the optional keys " + ", ".join(p.name for p in self.properties)
        return self.type


def _num(value: float) -> str:
    """A number as the messages show it: integral ones without '.0', very long ones cut short."""
    text = str(value) if isinstance(value, int) else (str(int(value)) if value.is_integer() else str(value))
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text.lstrip('-'))} digits)"


class HugeNumber:
    """An integer of a JSON body with more digits than Python converts (sys.get_int_max_str_digits,
    4300): kept as its text, it is out of every bound and is refused like any number out of bounds."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"{self.text[:12]}... ({len(self.text.lstrip('-'))} digits)"


@dataclasses.dataclass(frozen=True)
class FieldError:
    name: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason}


class ValidationFailed(Exception):
    """One or more parameters are invalid. Carries every problem found."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("; ".join(f"{e.name}: {e.reason}" for e in errors))
        self.errors = list(errors)


def did_you_mean(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"unknown parameter.{hint} Known parameters: {', '.join(known) or 'none'}"


def parse_query(params: Sequence[Param], raw: Mapping[str, str | list[str]]) -> dict[str, Any]:
    """Validate query-string values (all strings). Returns every parameter, defaults filled in."""
    errors: list[FieldError] = []
    known = [p.name for p in params]
    for name in raw:
        if name not in known:
            errors.append(FieldError(name, did_you_mean(name, known)))
    values: dict[str, Any] = {}
    for param in params:
        if param.name not in raw:
            if param.required:
                errors.append(FieldError(param.name, f"is required; expected {param.allowed()}"))
            values[param.name] = param.default
            continue
        value = raw[param.name]
        if isinstance(value, list):
            errors.append(FieldError(param.name, "must be given once; it was repeated"))
            continue
        try:
            values[param.name] = _coerce_text(param, value)
        except ValueError as exc:
            errors.append(FieldError(param.name, str(exc)))
    if errors:
        raise ValidationFailed(errors)
    return values


def _coerce_text(param: Param, text: str) -> Any:
    """A query-string value converted to the parameter's type, or ValueError with the reason."""
    if param.type == "integer":
        if not _INTEGER.match(text.strip()):
            raise ValueError(f"{text!r} is not valid; expected {param.allowed()}")
        return _check_scalar(param, int(text.strip()))
    if param.type == "boolean":
        if text not in ("true", "false"):
            raise ValueError(f"{text!r} is not valid; expected {param.allowed()}")
        return text == "true"
    if param.type == "number":
        try:
            if not _NUMBER.match(text.strip()):
                raise ValueError(text)
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not valid; expected {param.allowed()}") from None
        return _check_scalar(param, number)
    return _check_scalar(param, text)


def parse_body(params: Sequence[Param], body: Any) -> dict[str, Any]:
    """Validate a decoded JSON body (an object). Returns every field, defaults filled in."""
    if not isinstance(body, dict):
        raise ValidationFailed([FieldError("body", "must be a JSON object")])
    errors: list[FieldError] = []
    known = [p.name for p in params]
    for name in body:
        if name not in known:
            errors.append(FieldError(name, did_you_mean(name, known).replace("parameter", "field")))
    values: dict[str, Any] = {}
    for param in params:
        if param.name not in body:
            if param.required:
                errors.append(FieldError(param.name, f"is required; expected {param.allowed()}"))
            values[param.name] = param.default
            continue
        if body[param.name] is None:  # no field's schema allows null: leave the field out instead
            errors.append(FieldError(param.name, f"must not be null; leave it out or send {param.allowed()}"))
            continue
        try:
            values[param.name] = _check_json(param, body[param.name], param.name)
        except ValidationFailed as exc:
            errors.extend(exc.errors)
    if errors:
        raise ValidationFailed(errors)
    return values


def _check_json(param: Param, value: Any, path: str) -> Any:
    """A JSON value checked against the parameter, recursively. Raises ValidationFailed."""
    def fail(reason: str) -> ValidationFailed:
        return ValidationFailed([FieldError(path, reason)])

    if isinstance(value, HugeNumber):
        expected = param.allowed()
        raise fail(f"{value!r} is out of bounds; expected {expected}" if param.type in ("integer", "number")
                   else f"{value!r} is not valid; expected {expected}")
    if param.type == "integer":
        # JSON Schema counts 147.0 as an integer (a number with a zero fractional part), and
        # so do the clients that generate requests from the OpenAPI document.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(f"{value!r} is not valid; expected {param.allowed()}")
    elif param.type == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(f"{value!r} is not valid; expected {param.allowed()}")
    elif param.type == "boolean":
        if not isinstance(value, bool):
            raise fail(f"{value!r} is not valid; expected {param.allowed()}")
        return value
    elif param.type == "string":
        if not isinstance(value, str):
            raise fail(f"must be a string; expected {param.allowed()}")
    elif param.type == "array":
        if not isinstance(value, list):
            raise fail(f"must be an array; expected {param.allowed()}")
        if param.min_items is not None and len(value) < param.min_items:
            raise fail(f"must have at least {param.min_items} item(s); it is empty" if not value
                       else f"must have at least {param.min_items} items")
        if param.max_items is not None and len(value) > param.max_items:
            raise fail(f"has {len(value)} items; at most {param.max_items} are allowed")
        assert param.items is not None
        errors: list[FieldError] = []
        checked = []
        for index, item in enumerate(value):
            try:
                checked.append(_check_json(param.items, item, f"{path}[{index}]"))
            except ValidationFailed as exc:
                errors.extend(exc.errors)
        if errors:
            raise ValidationFailed(errors)
        if param.unique_items and len(set(checked)) != len(checked):
            raise fail("must not repeat a value")
        return tuple(checked)
    elif param.type == "object":
        if not isinstance(value, dict):
            raise fail(f"must be an object; expected {param.allowed()}")
        assert param.properties is not None
        members = {p.name: p for p in param.properties}
        errors = []
        result: dict[str, Any] = {}
        for key, item in value.items():
            if key not in members:
                errors.append(FieldError(f"{path}.{key}", did_you_mean(key, list(members)).replace("parameter", "key")))
                continue
            try:
                result[key] = _check_json(members[key], item, f"{path}.{key}")
            except ValidationFailed as exc:
                errors.extend(exc.errors)
        if errors:
            raise ValidationFailed(errors)
        return result
    try:
        return _check_scalar(param, value)
    except ValueError as exc:
        raise fail(str(exc)) from None


def _check_scalar(param: Param, value: Any) -> Any:
    """Enum, bounds and length checks shared by query strings and JSON. ValueError on failure."""
    if param.type == "number" and isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not valid; expected {param.allowed()}")
    if param.type in ("integer", "number"):
        if (param.minimum is not None and value < param.minimum) or (
            param.maximum is not None and value > param.maximum
        ):
            raise ValueError(f"{_num(value)} is out of bounds; expected {param.allowed()}")
        return value
    if param.enum is not None:
        if value not in param.enum:
            close = difflib.get_close_matches(str(value).lower(), param.enum, n=1, cutoff=0.5)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(f"{value!r} is not allowed{hint}; expected {param.allowed()}")
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON \ud800 escape: not text
        raise ValueError("is not valid Unicode text") from None
    if param.min_length is not None and len(value) < param.min_length:
        raise ValueError("must not be empty" if not value else f"is too short; expected {param.allowed()}")
    if param.max_length is not None and len(value) > param.max_length:
        raise ValueError(f"is {len(value)} characters long; expected {param.allowed()}")
    if param.not_blank and not _NOT_BLANK.search(value):
        raise ValueError("must not be blank (white space only)")
    return param.normalise(value) if param.normalise else value
