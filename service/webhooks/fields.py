"""A webhook's fields and their rules: create and update bodies are checked here, every
bad field named in the problem's `errors`."""

from __future__ import annotations

import math
import re
from typing import Any

from service.engine.requests import TRENDING_DIMENSIONS, TRENDING_METRICS
from service.params import FieldError
from service.webhooks import ssrf
from service.windows import TRENDING_WINDOWS

MAX_WEBHOOKS_PER_SUBSCRIPTION = 10
COOLDOWN_MINUTES = (15, 1440)
MAX_DESCRIPTION = 500
MAX_THRESHOLD_PCT = 1e9
MAX_MIN_BASELINE = 1e12

FIELDS = ("url", "window", "dimension", "metric", "threshold_pct", "cooldown_minutes", "min_baseline", "enabled",
          "description")
REQUIRED = ("url", "window", "dimension", "threshold_pct", "cooldown_minutes")
DEFAULTS: dict[str, Any] = {"metric": "suppressions", "min_baseline": 10.0, "enabled": True, "description": ""}

# JSON Schema of the writable fields (OpenAPI), the same bounds as `check_fields`.
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
                    "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",
                    "description": "Free text for your own use, without control characters."},
}


# Control characters (C0, DEL, C1) and lone surrogates (a JSON "\\ud800" that pairs with nothing).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _number(value: Any) -> bool:
    """A JSON number (of any size: only floats can be infinite; an int too large for a float is
    refused by the bounds that follow, never converted first)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def check_field(name: str, value: Any, *, allow_private: bool) -> tuple[Any, FieldError | None]:
    """The stored value of one field, or why it is refused."""
    if name == "url":
        try:
            ssrf.check(value, allow_private=allow_private)
        except ssrf.UrlRefused as exc:
            return None, FieldError("url", str(exc))
        return value, None
    if name in ("window", "dimension", "metric"):
        choices = {"window": TRENDING_WINDOWS, "dimension": TRENDING_DIMENSIONS, "metric": TRENDING_METRICS}[name]
        if value not in choices:
            return None, FieldError(name, "must be one of " + ", ".join(choices))
        return value, None
    if name == "threshold_pct":
        if not _number(value) or not 0 < value <= MAX_THRESHOLD_PCT:
            return None, FieldError(name, "must be a number greater than 0 (a percentage, e.g. 50)")
        return float(value), None
    if name == "cooldown_minutes":
        low, high = COOLDOWN_MINUTES
        # JSON Schema counts 60.0 as an integer, as the query parameters do (service/params.py)
        integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not integral or not low <= value <= high:
            return None, FieldError(name, f"must be an integer from {low} to {high} (15 minutes to 24 hours)")
        return int(value), None
    if name == "min_baseline":
        if not _number(value) or not 0 <= value <= MAX_MIN_BASELINE:
            return None, FieldError(name, "must be a number of at least 0")
        return float(value), None
    if name == "enabled":
        if not isinstance(value, bool):
            return None, FieldError(name, "must be true or false")
        return value, None
    if name == "description":
        if not isinstance(value, str) or len(value) > MAX_DESCRIPTION or _CONTROL.search(value):
            return None, FieldError(name, f"must be text of at most {MAX_DESCRIPTION} characters, without "
                                          "control characters")
        return value, None
    return None, FieldError(name, "is not a field of a webhook; fields: " + ", ".join(FIELDS))


def check_body(body: Any, *, creating: bool, allow_private: bool) -> tuple[dict[str, Any], list[FieldError]]:
    """The fields of a create (defaults filled) or update (only those given) body, and the errors."""
    if not isinstance(body, dict):
        return {}, [FieldError("body", "must be a JSON object")]
    values: dict[str, Any] = {}
    errors: list[FieldError] = []
    for name, value in body.items():
        if value is None:
            errors.append(FieldError(name, "must not be null (leave it out for the default)"))
            continue
        checked, error = check_field(name, value, allow_private=allow_private)
        if error:
            errors.append(error)
        else:
            values[name] = checked
    if creating:
        for name in REQUIRED:
            if name not in body:
                errors.append(FieldError(name, "is required"))
        for name, default in DEFAULTS.items():
            values.setdefault(name, default)
    elif not body:
        errors.append(FieldError("body", "names no field to change; fields: " + ", ".join(FIELDS)))
    return values, errors
