"""The webhook operations' entries in the OpenAPI document (service/api/openapi.py documents each
operation of the table, service/api/operations.py, these here): their responses, and their parameters
and bodies from the table's fields."""

from __future__ import annotations

from typing import Any

from service.api.operations import Operation
from service.api.params import Param
from service.webhooks.fields import FIELDS, MAX_WEBHOOKS_PER_SUBSCRIPTION

_TIME = {"type": "string", "format": "date-time"}
WEBHOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        **{field.name: {k: v for k, v in field.json_schema().items() if k != "default"} for field in FIELDS},
        "disabled_reason": {"type": ["string", "null"], "description": "Why the service disabled it (410 Gone)."},
        "created_at": _TIME, "updated_at": _TIME,
        "cooldown_until": {"type": ["string", "null"], "format": "date-time",
                           "description": "No alert before this time."},
    },
    "required": ["id", *(field.name for field in FIELDS), "disabled_reason", "created_at", "updated_at",
                 "cooldown_until"],
}
_WITH_SECRET = {"allOf": [WEBHOOK_SCHEMA, {"type": "object", "required": ["secret"], "properties": {
    "secret": {"type": "string", "pattern": "^whsec_",
               "description": "The signing secret (Standard Webhooks), shown only in this response."}}}]}
_ATTEMPT = {"type": "object", "properties": {
    "id": {"type": "integer"}, "delivery_id": {"type": "string", "description": "The webhook-id header."},
    "event": {"type": "string", "enum": ["trending_alert", "test"]}, "attempt": {"type": "integer", "minimum": 1},
    "attempted_at": _TIME, "status_code": {"type": ["integer", "null"]}, "duration_ms": {"type": "integer"},
    "error": {"type": ["string", "null"]},
    "outcome": {"type": "string", "enum": ["succeeded", "retrying", "failed", "disabled"]}}}


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_NOT_FOUND = {"description": "No such webhook in this key's subscription (another subscription's id included).",
              "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}


def _problems(*statuses: str) -> dict[str, Any]:
    return {s: _NOT_FOUND if s == "404" else {"$ref": f"#/components/responses/Problem{s}"} for s in statuses}


_ID = [{"name": "webhook_id", "in": "path", "required": True, "schema": {"type": "string"}}]
_COMMON = ("400", "401", "414", "429", "500", "503")


def _body(fields: tuple[Param, ...]) -> dict[str, Any]:
    """A create body (its required fields) or an update body (any one field at least)."""
    required = [field.name for field in fields if field.required]
    schema = {"type": "object", "properties": {field.name: field.json_schema() for field in fields},
              **({"required": required} if required else {"minProperties": 1}), "additionalProperties": False}
    return {"required": True, "content": {"application/json": {"schema": schema}}}


_ONE = {"200": _json("The webhook.", WEBHOOK_SCHEMA)}

# Each webhook operation's responses, by operationId.
RESPONSES: dict[str, dict[str, Any]] = {
    "list_webhooks": {"200": _json("The webhooks.", {"type": "object", "properties": {
        "webhooks": {"type": "array", "items": WEBHOOK_SCHEMA},
        "limit": {"type": "integer", "const": MAX_WEBHOOKS_PER_SUBSCRIPTION}}}), **_problems(*_COMMON)},
    "create_webhook": {
        "201": {**_json("Created; the secret is shown only now.", _WITH_SECRET),
                "headers": {"Location": {"schema": {"type": "string"}}}},
        "409": {"description": f"The subscription already has {MAX_WEBHOOKS_PER_SUBSCRIPTION} webhooks.",
                "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
        **_problems(*_COMMON, "413", "415")},
    "get_webhook": {**_ONE, **_problems(*_COMMON, "404")},
    "update_webhook": {**_ONE, **_problems(*_COMMON, "404", "413", "415")},
    "delete_webhook": {"204": {"description": "Deleted."}, **_problems(*_COMMON, "404")},
    "test_webhook": {"202": _json("Queued.", {"type": "object", "required": ["delivery_id", "attempt"],
                                              "properties": {"delivery_id": {"type": "string"},
                                                             "attempt": {"type": "null"}}}),
                     **_problems(*_COMMON, "404")},
    "list_webhook_deliveries": {"200": _json("Attempts.", {"type": "object", "properties": {
        "deliveries": {"type": "array", "items": _ATTEMPT},
        "next_before": {"type": ["integer", "null"]}}}), **_problems(*_COMMON, "404")},
    "rotate_webhook_secret": {"200": _json("The webhook with its new secret.", _WITH_SECRET),
                              **_problems(*_COMMON, "404")},
}


def webhook_operation(operation: Operation) -> dict[str, Any]:
    """One webhook operation of the table as the document describes it."""
    op: dict[str, Any] = {"operationId": operation.name, "summary": operation.summary,
                          "description": operation.description, "tags": [operation.tag],
                          "security": [{"bearerAuth": []}],
                          "responses": dict(sorted(RESPONSES[operation.name].items()))}
    if operation.params and operation.in_body:
        op["requestBody"] = _body(operation.params)
    query: list[dict[str, Any]] = [] if operation.in_body else [
        {"name": p.name, "in": "query", "schema": p.json_schema()} for p in operation.params]
    if "{webhook_id}" in operation.path:
        query = [*_ID, *query]
    if query:
        op["parameters"] = query
    return op
