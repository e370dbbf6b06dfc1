"""A webhook's fields and their rules: create and update bodies are checked here, every
bad field named in the problem's `errors`."""

from __future__ import annotations

import dataclasses
from typing import Any

import paramcheck
from paramcheck import NO_CONTROL_PATTERN, FieldError
from service.engine.requests import TRENDING_DIMENSIONS, TRENDING_METRICS
from service.webhooks import ssrf
from service.windows import TRENDING_WINDOWS

MAX_WEBHOOKS_PER_SUBSCRIPTION = 10
COOLDOWN_MINUTES = (15, 1440)
MAX_DESCRIPTION = 500
MAX_THRESHOLD_PCT = 1e9
MAX_MIN_BASELINE = 1e12

REQUIRED = ("url", "window", "dimension", "threshold_pct", "cooldown_minutes")

# The writable fields: their JSON Schema (the OpenAPI document) is what create and update bodies
# are checked against (paramcheck, as the data endpoints' parameters), and their defaults.
FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "url": {"type": "string", "format": "uri", "maxLength": ssrf.MAX_URL_LENGTH,
            "description": "https URL on port 443 or 8443; its host must resolve only to public addresses (checked again at each "
                           "delivery)."},
    "window": {"type": "string", "enum": list(TRENDING_WINDOWS), "description": "Trending window, as GET /trending."},
    "dimension": {"type": "string", "enum": list(TRENDING_DIMENSIONS)},
    "metric": {"type": "string", "enum": list(TRENDING_METRICS), "default": "suppressions"},
    "threshold_pct": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_THRESHOLD_PCT,
                      "description": "An alert lists the trending values whose growth_pct exceeds this."},
    "cooldown_minutes": {"type": "integer", "minimum": COOLDOWN_MINUTES[0], "maximum": COOLDOWN_MINUTES[1],
                         "description": "At most one alert per cooldown."},
    "min_baseline": {"type": "number", "minimum": 0, "maximum": MAX_MIN_BASELINE, "default": 10,
                     "description": "As GET /trending's min_baseline."},
    "enabled": {"type": "boolean", "default": True},
    "description": {"type": "string", "maxLength": MAX_DESCRIPTION, "default": "",
                    "pattern": NO_CONTROL_PATTERN,
                    "description": "Free text for your own use, without control characters."},
}
DEFAULTS: dict[str, Any] = {name: schema["default"] for name, schema in FIELD_SCHEMAS.items() if "default" in schema}


@dataclasses.dataclass(frozen=True)
class WebhookField:
    """A writable field, checked by paramcheck against its schema (required only when creating)."""

    name: str
    schema: dict[str, Any]
    required: bool = False


CREATE_FIELDS = tuple(WebhookField(name, schema, name in REQUIRED) for name, schema in FIELD_SCHEMAS.items())
UPDATE_FIELDS = tuple(WebhookField(name, schema) for name, schema in FIELD_SCHEMAS.items())


def _stored(name: str, value: Any) -> Any:
    """A checked value as it is stored: numbers as floats."""
    return float(value) if FIELD_SCHEMAS[name]["type"] == "number" else value


def check_body(body: Any, *, creating: bool, allow_private: bool) -> tuple[dict[str, Any], list[FieldError]]:
    """The fields of a create (defaults filled) or update (only those given) body, and the errors."""
    values, errors = paramcheck.check_body(CREATE_FIELDS if creating else UPDATE_FIELDS, body)
    if "url" in values:  # what a schema cannot say: where the URL may point
        try:
            ssrf.check(values["url"], allow_private=allow_private)
        except ssrf.UrlRefused as exc:
            del values["url"]
            unknown = sum(1 for e in errors if e.name not in FIELD_SCHEMAS)  # url is the first field
            errors.insert(unknown, FieldError("url", str(exc)))
    if creating:
        for name in DEFAULTS:
            values.setdefault(name, DEFAULTS[name])
    elif isinstance(body, dict) and not body:
        errors.append(FieldError("body", "names no field to change; fields: " + ", ".join(FIELD_SCHEMAS)))
    return {name: _stored(name, value) for name, value in values.items()}, errors
