"""Checking request parameters against their JSON Schema, worded one way.

The API (`service/api/params.py`, whose `Param` objects give the schemas of the served OpenAPI
document) and the client (`connectors/operations.py`, which reads that document) both check
arguments here, so a caller reads the same reason whichever of the two refused. This package
imports neither of them.

- `wording`: what a schema allows and why a value is refused, in the API's words.
- `check`: the checks themselves, for query strings and decoded JSON bodies.
"""

from paramcheck.check import (
    Field,
    FieldError,
    HugeNumber,
    check_body,
    check_json,
    check_query,
    check_text,
)
from paramcheck.wording import NO_CONTROL_PATTERN, NOT_BLANK_PATTERN, allowed, did_you_mean, reason, summary

__all__ = [
    "NOT_BLANK_PATTERN",
    "NO_CONTROL_PATTERN",
    "Field",
    "FieldError",
    "HugeNumber",
    "allowed",
    "check_body",
    "check_json",
    "check_query",
    "check_text",
    "did_you_mean",
    "reason",
    "summary",
]
