"""A webhook's fields and their rules, declared as `Param`s like the data endpoints' parameters:
several are /trending's own (same values, same bounds), so an alert is always a request /trending
takes. The create and update bodies are checked against them, every bad field named in the
problem's `errors`; the OpenAPI document's request bodies are their schemas (service/api/operations.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import paramcheck
from paramcheck import NO_CONTROL_PATTERN, FieldError
from service.api.endpoint_params import MIN_BASELINE, TRENDING_DIMENSION, TRENDING_METRIC, TRENDING_WINDOW
from service.api.params import Param
from service.webhooks import ssrf

MAX_WEBHOOKS_PER_SUBSCRIPTION = 10
COOLDOWN_MINUTES = (15, 1440)
MAX_DESCRIPTION = 500
MAX_THRESHOLD_PCT = 1e9
MAX_MIN_BASELINE = 1e12

# The writable fields, in the order the document lists them; `required` when creating.
FIELDS: tuple[Param, ...] = (
    Param("url", "string", "https URL on port 443 or 8443; its host must resolve only to public addresses "
                           "(checked again at each delivery).",
          required=True, format="uri", max_length=ssrf.MAX_URL_LENGTH),
    dataclasses.replace(TRENDING_WINDOW, description="Trending window, as GET /trending.", default=None,
                        required=True),
    dataclasses.replace(TRENDING_DIMENSION, description="", default=None, required=True),
    dataclasses.replace(TRENDING_METRIC, description=""),
    Param("threshold_pct", "number", "An alert lists the trending values whose growth_pct exceeds this.",
          required=True, exclusive_minimum=0, maximum=MAX_THRESHOLD_PCT),
    Param("cooldown_minutes", "integer", "At most one alert per cooldown.", required=True,
          minimum=COOLDOWN_MINUTES[0], maximum=COOLDOWN_MINUTES[1]),
    dataclasses.replace(MIN_BASELINE, description="As GET /trending's min_baseline.", maximum=MAX_MIN_BASELINE),
    Param("enabled", "boolean", "", default=True),
    Param("description", "string", "Free text for your own use, without control characters.",
          max_length=MAX_DESCRIPTION, default="", pattern=NO_CONTROL_PATTERN),
)
BY_NAME = {field.name: field for field in FIELDS}
DEFAULTS: dict[str, Any] = {field.name: field.default for field in FIELDS if field.default is not None}
UPDATE_FIELDS = tuple(dataclasses.replace(field, required=False) for field in FIELDS)


def _stored(name: str, value: Any) -> Any:
    """A checked value as it is stored: numbers as floats."""
    return float(value) if BY_NAME[name].type == "number" else value


def check_body(body: Any, *, creating: bool, allow_private: bool) -> tuple[dict[str, Any], list[FieldError]]:
    """The fields of a create (defaults filled) or update (only those given) body, and the errors."""
    values, errors = paramcheck.check_body(FIELDS if creating else UPDATE_FIELDS, body)
    if "url" in values:  # what a schema cannot say: where the URL may point
        try:
            ssrf.check(values["url"], allow_private=allow_private)
        except ssrf.UrlRefused as exc:
            del values["url"]
            unknown = sum(1 for e in errors if e.name not in BY_NAME)  # url is the first field
            errors.insert(unknown, FieldError("url", str(exc)))
    if creating:
        for name in DEFAULTS:
            values.setdefault(name, DEFAULTS[name])
    elif isinstance(body, dict) and not body:
        errors.append(FieldError("body", "names no field to change; fields: " + ", ".join(BY_NAME)))
    return {name: _stored(name, value) for name, value in values.items()}, errors
