"""The management API's entries in the OpenAPI document (merged by service/openapi.py)."""

from __future__ import annotations

from typing import Any

from service.errors import WEBHOOK_LIMIT, problem_type
from service.webhooks.fields import FIELD_SCHEMAS, MAX_WEBHOOKS_PER_SUBSCRIPTION, REQUIRED
from service.webhooks.resources import DELIVERIES_LIMIT, MAX_BEFORE, WEBHOOK_PATH, WEBHOOKS_PATH

_TIME = {"type": "string", "format": "date-time"}
WEBHOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        **{name: {k: v for k, v in schema.items() if k != "default"} for name, schema in FIELD_SCHEMAS.items()},
        "disabled_reason": {"type": ["string", "null"], "description": "Why the service disabled it (410 Gone)."},
        "created_at": _TIME, "updated_at": _TIME,
        "cooldown_until": {"type": ["string", "null"], "format": "date-time",
                           "description": "No alert before this time."},
    },
    "required": ["id", *FIELD_SCHEMAS, "disabled_reason", "created_at", "updated_at", "cooldown_until"],
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


def _op(path: str, op_id: str, summary: str, description: str, responses: dict[str, Any], **extra: Any) -> dict[str, Any]:
    op = {"operationId": op_id, "summary": summary, "description": description, "tags": ["webhooks"],
          "security": [{"bearerAuth": []}], "responses": dict(sorted(responses.items())), **extra}
    if "{webhook_id}" in path:
        op["parameters"] = [*_ID, *op.get("parameters", [])]
    return op


def webhook_paths() -> dict[str, Any]:
    body = {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "properties": FIELD_SCHEMAS, "required": list(REQUIRED), "additionalProperties": False}}}}
    patch = {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "properties": FIELD_SCHEMAS, "minProperties": 1, "additionalProperties": False}}}}
    low, high, default = DELIVERIES_LIMIT
    return {
        WEBHOOKS_PATH: {
            "get": _op(WEBHOOKS_PATH, "list_webhooks", "List webhooks", "This key's subscription's webhooks (any plan).",
                       {"200": _json("The webhooks.", {"type": "object", "properties": {
                           "webhooks": {"type": "array", "items": WEBHOOK_SCHEMA},
                           "limit": {"type": "integer", "const": MAX_WEBHOOKS_PER_SUBSCRIPTION}}}),
                        **_problems(*_COMMON)}),
            "post": _op(WEBHOOKS_PATH, "create_webhook", "Create a webhook",
                        f"A trending alert (payload trending_alert, signed per Standard Webhooks) is POSTed to `url` "
                        f"when a value's growth_pct in GET /trending (same window, dimension, metric, min_baseline) "
                        f"exceeds threshold_pct, at most once per cooldown. At most {MAX_WEBHOOKS_PER_SUBSCRIPTION} "
                        f"per subscription: the next is refused with 409 ({problem_type(409, WEBHOOK_LIMIT)}).",
                        {"201": {**_json("Created; the secret is shown only now.", _WITH_SECRET),
                                 "headers": {"Location": {"schema": {"type": "string"}}}},
                         "409": {"description": f"The subscription already has {MAX_WEBHOOKS_PER_SUBSCRIPTION} "
                                                f"webhooks.", "content": {"application/problem+json": {
                                                    "schema": {"$ref": "#/components/schemas/Problem"}}}},
                         **_problems(*_COMMON, "413", "415")}, requestBody=body),
        },
        WEBHOOK_PATH: {
            "get": _op(WEBHOOK_PATH, "get_webhook", "Get a webhook", "One webhook (404 for another subscription's).",
                       {"200": _json("The webhook.", WEBHOOK_SCHEMA), **_problems(*_COMMON, "404")}),
            "patch": _op(WEBHOOK_PATH, "update_webhook", "Update a webhook", "Change the fields given.",
                         {"200": _json("The webhook.", WEBHOOK_SCHEMA), **_problems(*_COMMON, "404", "413", "415")},
                         requestBody=patch),
            "delete": _op(WEBHOOK_PATH, "delete_webhook", "Delete a webhook", "Deletes it with its deliveries.",
                          {"204": {"description": "Deleted."}, **_problems(*_COMMON, "404")}),
        },
        WEBHOOK_PATH + "/test": {
            "post": _op(WEBHOOK_PATH, "test_webhook", "Send a test delivery",
                        "Queues a signed trending_alert with no alerts; the worker process sends it within about "
                        "a second and retries it like any delivery if it fails. Its attempts appear in "
                        "`/deliveries` (the `Location` header) under the `delivery_id` answered here.",
                        {"202": _json("Queued.", {"type": "object", "required": ["delivery_id", "attempt"],
                                                  "properties": {"delivery_id": {"type": "string"},
                                                                 "attempt": {"type": "null"}}}),
                         **_problems(*_COMMON, "404")}),
        },
        WEBHOOK_PATH + "/deliveries": {
            "get": _op(WEBHOOK_PATH, "list_webhook_deliveries", "List delivery attempts",
                       "Every attempt, newest first. Next page: `before` = the previous page's `next_before` "
                       "(also in the Link header, rel=next).",
                       {"200": _json("Attempts.", {"type": "object", "properties": {
                           "deliveries": {"type": "array", "items": _ATTEMPT},
                           "next_before": {"type": ["integer", "null"]}}}), **_problems(*_COMMON, "404")},
                       parameters=[
                           {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": low,
                                                                       "maximum": high, "default": default}},
                           {"name": "before", "in": "query", "schema": {"type": "integer", "minimum": 0,
                                                                        "maximum": MAX_BEFORE}}]),
        },
        WEBHOOK_PATH + "/rotate-secret": {
            "post": _op(WEBHOOK_PATH, "rotate_webhook_secret", "Rotate the signing secret",
                        "A new secret, shown only in this response; the old one stops signing at once.",
                        {"200": _json("The webhook with its new secret.", _WITH_SECRET),
                         **_problems(*_COMMON, "404")}),
        },
    }
