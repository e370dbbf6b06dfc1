"""The OpenAPI 3.1 document, generated from the operation table (service/api/operations.py)."""

from __future__ import annotations

from typing import Any

from flatcolumns import document_entry, flat_columns, schema_shape
from service import __version__
from service.api.account_schema import ACCOUNT_SCHEMA
from service.api.disclaimer import DISCLAIMER
from service.api.endpoint_params import INTERVAL_LEVEL
from service.api.endpoints import Endpoint
from service.api.operations import OPERATIONS, Operation
from service.api.paging import CURSOR, LINK_DESCRIPTION, TOTAL_DESCRIPTION, TOTAL_HEADER
from service.api.tiers import Tier
from service.api.token_fields import TOKEN_SCHEMA
from service.http.errors import (
    ANSWER_NOT_READY,
    COMPUTATION_TIMEOUT,
    CREDENTIAL_NOT_ALLOWED,
    PRIVACY_BUDGET,
    problem_type,
)
from service.http.middleware.url_length import MAX_URL_BYTES
from service.privacy.budget import HEADER as BUDGET_HEADER
from service.settings import COMPUTE_DEADLINE_SECONDS, QUERY_MAX_CELLS
from service.webhooks.openapi import webhook_operation

_ERRORS = {
    "400": "Invalid or missing parameter. `errors` names each bad parameter with the allowed values or bounds.",
    "401": "Missing or invalid API key, or a browser token that has expired, was not issued here or was altered, "
           "or whose key has been revoked or has expired. Carries `WWW-Authenticate: Bearer`.",
    "403": "The endpoint requires a higher plan tier (type " + problem_type(403) + "), or the credential may not "
           "be used here (type " + problem_type(403, CREDENTIAL_NOT_ALLOWED) + "): a browser token from an origin or "
           "on an endpoint it does not list, or an API key sent with an Origin header (from a web page: mint a "
           "token at POST /api/v1/tokens).",
    "414": f"The URL (path and query string) is longer than {MAX_URL_BYTES} bytes.",
    "429": "Rate limit exceeded (per subscription per minute, or too many failed authentications from an "
           "address), or, on the signals endpoints, the subscription's privacy budget for the month would be "
           "passed by this answer (type " + problem_type(429, PRIVACY_BUDGET) + ", with `privacy_budget`: "
           "`limit`, `spent`, `remaining`, the answer's `charge` and when it `renews`, in epsilon; "
           "`Retry-After` is the time until it renews). Carries `Retry-After` in whole seconds.",
    "500": "Internal server error. Quote `request_id` to support.",
    "503": "The answer is being computed and will not be ready within the request's wait (type "
           + problem_type(503, ANSWER_NOT_READY) + ": the usual 503 when the hour turns; `Retry-After` says when it "
           "will be ready), a dependency (the accounts database) is unavailable, or computing the answer took more "
           "work than {deadline:g} seconds of the machine and was stopped (type "
           + problem_type(503, COMPUTATION_TIMEOUT) + "). Retry after `Retry-After` seconds.",
}

_QUERY_TOO_LARGE = (
    "The query could aggregate more than {max_cells:,} cells (groups), and is refused before anything is "
    "computed (type " + problem_type(422) + "). The bound on a query's cells is the number of time "
    "buckets (1 without `time`) times the values each grouped dimension takes in the window and the "
    "filters (geographic levels counted together, as the combinations that occur), and never more than "
    "the events the query matches. `estimated_cells` is that bound, `max_cells` the limit, `narrowings` "
    "single changes to the request that would fit (a coarser `bucket`, a shorter `window`, a `group_by` "
    "without one dimension), and `detail` says the same in words, filters included."
)

_PAGING_NOTE = (
    "\n\nPaging: the answer is the first `limit` rows of the full answer; the header Signals-Total-Rows says "
    'how many rows the full answer holds, and Link rel="next" gives the URL of the next page while rows '
    "follow. Every row has the same numbers in every page."
)

_QUERY_COST_NOTE = (
    "\n\nCost bound: a query whose cells (groups) could exceed {max_cells:,} is refused with 422 before "
    "computing: the bound is (time buckets) x (values of each grouped dimension in the window and filters), "
    "and at most the events matched. Narrow a refused query with a shorter window, a coarser bucket, fewer "
    "group_by dimensions or filters; the 422 problem lists the changes that fit. A computation that still "
    "takes more work than {deadline:g} seconds of the machine (its CPU time on every core) is stopped with 503."
)

QUERY_TOO_LARGE_SCHEMA: dict[str, Any] = {
    "allOf": [
        {"$ref": "#/components/schemas/Problem"},
        {
            "type": "object",
            "properties": {
                "estimated_cells": {"type": "integer", "minimum": 0,
                                    "description": "Upper bound on the cells the query would aggregate."},
                "max_cells": {"type": "integer", "minimum": 1, "description": "The most cells a query may have."},
                "narrowings": {
                    "type": "array",
                    "description": "Single changes to the request body that bring it within max_cells.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "change": {"type": "object", "description": "Body fields to replace, e.g. "
                                                                        "{\"bucket\": \"day\"}."},
                            "estimated_cells": {"type": "integer", "minimum": 0},
                        },
                        "required": ["change", "estimated_cells"],
                    },
                },
            },
            "required": ["estimated_cells", "max_cells", "narrowings"],
        },
    ],
}

_BUDGET_HEADER = {
    BUDGET_HEADER: {"schema": {"type": "string"}, "description": (
        "The subscription's privacy budget this month, in epsilon (an RFC 8941 dictionary): "
        'remaining=<left>, limit=<a month>, spent=<so far>, charged=<this answer>, renews="<ISO 8601 UTC>". '
        "An answer already received costs nothing to ask again. Absent when the deployment has no budget.")},
}

_RATE_HEADERS = {
    "RateLimit-Policy": {"schema": {"type": "string"}, "description": 'Quota per window, e.g. "observer";q=30;w=60.'},
    "RateLimit": {"schema": {"type": "string"}, "description": 'Remaining and reset seconds, e.g. "observer";r=29;t=60.'},
    "X-RateLimit-Limit": {"schema": {"type": "integer"}, "description": "Requests per minute of the plan."},
    "X-RateLimit-Remaining": {"schema": {"type": "integer"}, "description": "Requests left in the moving window."},
    "X-RateLimit-Reset": {"schema": {"type": "integer"},
                          "description": "Seconds until the oldest counted request leaves the window."},
}

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details.",
    "properties": {
        "type": {"type": "string", "description": "URI identifying the kind of problem, e.g. " + problem_type(400)},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["name", "reason"],
            },
        },
        "request_id": {"type": "string"},
        "disclaimer": {"type": "string"},
    },
    "required": ["type", "title", "status", "detail", "request_id", "disclaimer"],
}


def _tier_note(tier: Tier) -> str:
    higher = [t.label for t in Tier if t.rank > tier.rank]
    also = f" (and {', '.join(higher)})" if higher else ""
    return f"Minimum plan: {tier.label}{also}."


def _operation(endpoint: Endpoint, max_cells: int, deadline: float) -> dict[str, Any]:
    paged = any(p.name == "limit" for p in endpoint.params)
    description = f"{endpoint.description}\n\n{_tier_note(endpoint.min_tier)}"
    if paged:
        description += _PAGING_NOTE
    if endpoint.cost_bounded:
        description += _QUERY_COST_NOTE.format(max_cells=max_cells, deadline=deadline)
    op: dict[str, Any] = {
        "operationId": endpoint.name,
        "summary": endpoint.summary,
        "description": description,
        "tags": ["signals"],
        "x-min-tier": endpoint.min_tier.slug,
        "x-mcp-tool": endpoint.tool,
        # The records' flat columns (flatcolumns/; the document's `x-signals-columns`), in
        # order: every one a record may have (compare and intervals add theirs, /query has its group_by's).
        "x-signals-columns": [name for name, _path in flat_columns(schema_shape(endpoint.record_schema))],
        "security": [{"bearerAuth": []}, {"browserToken": []}],
    }
    ok_content: dict[str, Any] = {"application/json": {"schema": endpoint.envelope_schema()}}
    if endpoint.in_body:
        required = [p.name for p in endpoint.params if p.required]
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {p.name: p.json_schema() for p in endpoint.params},
                "required": required,
                "additionalProperties": False,
                **(endpoint.check_schema or {}),
            }}},
        }
        ok_content["text/csv"] = {
            "schema": {
                "type": "string",
                "description": "With format=csv: RFC 4180 CSV with a header row; columns are the JSON result fields.",
            },
        }
        # A later page: the cursor of the previous page's Link header (service/api/paging.py).
        op["parameters"] = [{
            "name": CURSOR, "in": "query", "required": False,
            "description": "A later page of the same answer: the cursor of the previous page's "
                           'Link rel="next" URL (post the same body to that URL). Opaque; it pins the '
                           "first page's as_of. Leave it out for the first page.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 200},
        }]
    else:
        op["parameters"] = [
            {
                "name": p.name,
                "in": "query",
                "required": p.required,
                "description": p.description,
                "schema": {k: v for k, v in p.json_schema().items() if k != "description"},
            }
            for p in endpoint.params
        ]
    responses: dict[str, Any] = {
        "200": {
            "description": "The aggregated statistics.",
            "headers": {
                "Last-Modified": {"schema": {"type": "string"},
                                  "description": "as_of: the end of the window (the requested as_of, when given)."},
                "X-Signals-As-Of": {"schema": {"type": "string", "format": "date-time"},
                                    "description": "as_of in ISO 8601 UTC."},
                "ETag": {"schema": {"type": "string"}, "description": "Send it back in If-None-Match to get 304."},
                "Cache-Control": {"schema": {"type": "string"}, "description": "private, max-age=<seconds to the next hour>"},
                "X-Cache": {"schema": {"type": "string", "enum": ["hit", "miss"]}},
                TOTAL_HEADER: {"schema": {"type": "integer", "minimum": 0}, "description": TOTAL_DESCRIPTION},
                **({"Link": {"schema": {"type": "string"}, "description": LINK_DESCRIPTION}} if paged else {}),
                **_RATE_HEADERS,
                **_BUDGET_HEADER,
            },
            "content": ok_content,
        }
    }
    responses["304"] = {"description": "Not modified: the If-None-Match entity tag still matches."}
    if endpoint.in_body:
        responses["413"] = {"$ref": "#/components/responses/Problem413"}
        responses["415"] = {"$ref": "#/components/responses/Problem415"}
    if endpoint.cost_bounded:
        op["x-max-cells"] = max_cells
        responses["422"] = {"$ref": "#/components/responses/Problem422"}
    for status in _ERRORS:
        responses[status] = {"$ref": f"#/components/responses/Problem{status}"}
    op["responses"] = dict(sorted(responses.items()))
    return op


def _account_operation(operation: Operation) -> dict[str, Any]:
    """GET /api/v1/account (service/http/resources/account.py)."""
    responses: dict[str, Any] = {
        "200": {
            "description": "The key's subscription and what its plan may do.",
            "headers": {
                "ETag": {"schema": {"type": "string"}, "description": "Send it back in If-None-Match to get 304."},
                "Cache-Control": {"schema": {"type": "string"}, "description": "private, no-cache"},
                **_RATE_HEADERS,
                **_BUDGET_HEADER,
            },
            "content": {"application/json": {"schema": ACCOUNT_SCHEMA}},
        },
        "304": {"description": "Not modified: the If-None-Match entity tag still matches."},
    }
    for status in _ERRORS:
        if status != "403":  # every plan may ask who it is
            responses[status] = {"$ref": f"#/components/responses/Problem{status}"}
    return {
        "operationId": operation.name,
        "summary": operation.summary,
        "description": operation.description,
        "tags": [operation.tag],
        "security": [{"bearerAuth": []}],
        "responses": dict(sorted(responses.items())),
    }


# Any plan may call the account and webhook operations, but not with every credential.
_CREDENTIAL_403 = {
    "description": "Not with this credential (type " + problem_type(403, CREDENTIAL_NOT_ALLOWED) + "): a browser "
                   "token (tokens call the data endpoints only), or the API key sent with an Origin header (from a "
                   "web page). Every plan may call it with its key, from a server.",
    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
}


def _token_operation(operation: Operation) -> dict[str, Any]:
    """POST /api/v1/tokens (service/http/resources/tokens.py; its fields: service/api/token_fields.py)."""
    responses: dict[str, Any] = {
        "201": {
            "description": "The token and what it allows. A credential: never stored by a cache (no-store).",
            "headers": {"Cache-Control": {"schema": {"type": "string"}, "description": "no-store"}, **_RATE_HEADERS},
            "content": {"application/json": {"schema": TOKEN_SCHEMA}},
        },
        "403": {"description": "A token was sent instead of a key (a token cannot mint tokens), the key was sent "
                               "with an Origin header (keys are for servers: mint on your server), or `endpoints` "
                               "names one above the subscription's plan (`errors` names each).",
                "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
        "413": {"$ref": "#/components/responses/Problem413"},
        "415": {"$ref": "#/components/responses/Problem415"},
    }
    for status in _ERRORS:
        responses.setdefault(status, {"$ref": f"#/components/responses/Problem{status}"})
    return {
        "operationId": operation.name,
        "summary": operation.summary,
        "description": operation.description,
        "tags": [operation.tag],
        "security": [{"bearerAuth": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object",
            "properties": {p.name: p.json_schema() for p in operation.params},
            "required": [p.name for p in operation.params if p.required],
            "additionalProperties": False,
        }}}},
        "responses": dict(sorted(responses.items())),
    }


def build_openapi(max_cells: int = QUERY_MAX_CELLS, deadline: float = COMPUTE_DEADLINE_SECONDS) -> dict[str, Any]:
    """The document for a deployment whose /query bound is `max_cells` and whose computations stop
    after `deadline` seconds (SIGNALS_QUERY_MAX_CELLS, SIGNALS_COMPUTE_DEADLINE_SECONDS)."""
    paths: dict[str, Any] = {}
    for operation in OPERATIONS:
        if operation.endpoint is not None:
            entry = _operation(operation.endpoint, max_cells, deadline)
        elif operation.tag == "account":
            entry = _account_operation(operation)
        elif operation.tag == "tokens":
            entry = _token_operation(operation)
        else:
            entry = webhook_operation(operation)
        if "403" not in entry["responses"]:
            entry["responses"] = dict(sorted({**entry["responses"], "403": _CREDENTIAL_403}.items()))
        paths.setdefault(operation.path, {})[operation.method.lower()] = entry
    descriptions = {**_ERRORS, "413": "Request body larger than 64 KiB.", "415": "Request body is not JSON.",
                    "422": _QUERY_TOO_LARGE}
    descriptions = {status: text.format(max_cells=max_cells, deadline=deadline) for status, text in descriptions.items()}
    schemas = {"422": {"$ref": "#/components/schemas/QueryTooLarge"}}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Signals API",
            "version": __version__,
            "description": "Read-only, aggregated, anonymous statistics about content-filtering behaviour. "
                           + DISCLAIMER
                           + " Plans, lowest to highest: " + ", ".join(t.label for t in Tier)
                           + ". Requests per minute: "
                           + ", ".join(f"{t.label} {t.requests_per_minute}" for t in Tier) + ".",
        },
        "servers": [{"url": "/"}],
        # The plans, lowest to highest, for consumers that name a plan (the dashboard's "needs the
        # ... plan"): `x-min-tier` and the account's `plan` are these slugs.
        "x-plans": [{"plan": t.slug, "label": t.label, "requests_per_minute": t.requests_per_minute} for t in Tier],
        # How often an interval (intervals=true) holds the exact value, for consumers that say so ("90 %").
        "x-signals-interval-level": INTERVAL_LEVEL,
        # How records become flat columns (CSV, spreadsheets), and the headings of the nested ones.
        "x-signals-columns": document_entry(INTERVAL_LEVEL),
        "tags": [{"name": "signals", "description": "Aggregated statistics"},
                 {"name": "account", "description": "The key's subscription and plan"},
                 {"name": "tokens", "description": "Short-lived tokens for calling the API from a web page"},
                 {"name": "webhooks", "description": "Trending alerts sent to your URL"}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer",
                               "description": "API key issued with a subscription: Authorization: Bearer <key>. "
                                              "For servers: a key sent with an Origin header (from a web page) "
                                              "is refused with 403."},
                "browserToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                                 "description": "A browser token minted with a key at POST /api/v1/tokens: "
                                                "Authorization: Bearer <token>, from one of its origins (the Origin "
                                                "header), on its endpoints, until it expires. Data endpoints only."}
            },
            "schemas": {"Problem": PROBLEM_SCHEMA, "QueryTooLarge": QUERY_TOO_LARGE_SCHEMA},
            "responses": {
                f"Problem{status}": {
                    "description": text,
                    **({"headers": {"Retry-After": {"schema": {"type": "integer", "minimum": 1}}}}
                       if status in ("429", "503") else {}),
                    "content": {"application/problem+json": {
                        "schema": schemas.get(status, {"$ref": "#/components/schemas/Problem"})}},
                }
                for status, text in sorted(descriptions.items())
            },
        },
    }
