"""Declarative parameters: one `Param` describes a query parameter or body field once, and that
description drives validation, the OpenAPI document, the client and the MCP tool schemas.

Validation collects every problem in a request (not just the first) and reports each as
`{name, reason}` with the allowed values or bounds, so a caller can fix everything in one go.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from paramcheck import NOT_BLANK_PATTERN, FieldError, allowed, check_body, check_query

__all__ = ["NOT_BLANK_PATTERN", "FieldError", "Param", "ValidationFailed", "parse_body", "parse_query"]


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
    exclusive_minimum: float | None = None
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
    format: str | None = None  # JSON Schema `format` (documentation: `date-time`, `uri`)
    pattern: str | None = None  # strings: a regular expression the value must match (not_blank's otherwise)

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
            ("exclusiveMinimum", self.exclusive_minimum),
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("minItems", self.min_items),
            ("maxItems", self.max_items),
        ):
            if value is not None:
                schema[key] = int(value) if self.type == "integer" and key in ("minimum", "maximum") else value
        if self.not_blank or self.pattern is not None:
            schema["pattern"] = NOT_BLANK_PATTERN if self.not_blank else self.pattern
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

    @functools.cached_property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema that paramcheck checks values against."""
        return self.json_schema()

    def allowed(self) -> str:
        """A short human description of what is allowed, for error messages."""
        return allowed(self.schema)

    def normalised(self, value: Any) -> Any:
        """A checked value as it is matched: `normalise` applied to the strings it covers."""
        if self.normalise is not None and isinstance(value, str):
            return self.normalise(value)
        if self.items is not None and isinstance(value, tuple):
            return tuple(self.items.normalised(item) for item in value)
        if self.properties is not None and isinstance(value, dict):
            members = {p.name: p for p in self.properties}
            return {key: members[key].normalised(item) for key, item in value.items()}
        return value


class ValidationFailed(Exception):
    """One or more parameters are invalid. Carries every problem found."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("; ".join(f"{e.name}: {e.reason}" for e in errors))
        self.errors = list(errors)


def parse_query(params: Sequence[Param], raw: Mapping[str, str | list[str]]) -> dict[str, Any]:
    """Validate query-string values (all strings). Returns every parameter, defaults filled in."""
    values, errors = check_query(params, raw)
    return _complete(params, values, errors)


def parse_body(params: Sequence[Param], body: Any) -> dict[str, Any]:
    """Validate a decoded JSON body (an object). Returns every field, defaults filled in."""
    values, errors = check_body(params, body)
    return _complete(params, values, errors)


def _complete(params: Sequence[Param], values: dict[str, Any], errors: list[FieldError]) -> dict[str, Any]:
    if errors:
        raise ValidationFailed(errors)
    return {p.name: p.normalised(values[p.name]) if p.name in values else p.default for p in params}
