"""Every operation of the API in one table: the data endpoints (service/api/endpoints.py, which also
drives their validation), GET /account, minting a browser token and the webhook operations. The routes (service/app.py) and
the OpenAPI document (service/api/openapi.py) are both generated from it, so an operation that is served
is documented, and one that is documented is served (tests/api/test_operations.py).

Each operation carries one `example`: the arguments a consumer would send. The tests that call
every operation call it with these, and tests/docs/test_operation_consumers.py checks from this
table that every consumer (the Python client, the MCP tools and their page, the Apps Script
functions, the dashboard, the spec, the API page's examples) has the operation, naming any that
lacks it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from service.api.account_schema import ACCOUNT_PATH
from service.api.endpoints import ENDPOINTS, Endpoint
from service.api.params import Param
from service.api.token_fields import EXAMPLE as TOKEN_EXAMPLE
from service.api.token_fields import FIELDS as TOKEN_FIELDS
from service.api.token_fields import TOKENS_PATH
from service.http.errors import WEBHOOK_LIMIT, problem_type
from service.webhooks.fields import FIELDS, MAX_WEBHOOKS_PER_SUBSCRIPTION, UPDATE_FIELDS

WEBHOOKS_PATH = ACCOUNT_PATH + "/webhooks"
WEBHOOK_PATH = WEBHOOKS_PATH + "/{webhook_id}"
MAX_BEFORE = 2**63 - 1  # the largest id a database's BIGINT holds
DELIVERIES_LIMIT = Param("limit", "integer", "", default=20, minimum=1, maximum=100)
DELIVERIES_BEFORE = Param("before", "integer", "", minimum=0, maximum=MAX_BEFORE)


@dataclasses.dataclass(frozen=True)
class Operation:
    """One operation: its operationId, method and full path; the document's tag (`signals`,
    `account`, `webhooks`); which responder serves it (the resource named `resource` in
    service/app.py, its method `on_<method>[_<suffix>]`); its parameters (the query's, or the
    body's fields for POST and PATCH) and, for a data endpoint, its row of service/api/endpoints.py.
    `example`: the arguments of a request a consumer would send (path parameters among them by
    name: `webhook_id`), valid as they are."""

    name: str
    method: str
    path: str
    tag: str  # signals | account | tokens | webhooks
    resource: str
    summary: str
    description: str
    example: Mapping[str, Any]
    suffix: str | None = None
    params: tuple[Param, ...] = ()
    endpoint: Endpoint | None = None

    @property
    def responder(self) -> str:
        return f"on_{self.method.lower()}" + (f"_{self.suffix}" if self.suffix else "")

    @property
    def in_body(self) -> bool:
        return self.method in ("POST", "PATCH")


def _data(endpoint: Endpoint) -> Operation:
    return Operation(endpoint.name, endpoint.method, endpoint.full_path, "signals", endpoint.name, endpoint.summary,
                     endpoint.description, endpoint.example, params=endpoint.params, endpoint=endpoint)


EXAMPLE_WEBHOOK = {"webhook_id": "wh_3Xq9TzV1mC8pLk2RbN7sYw"}  # the examples' webhook (its id as the store makes them)


def _webhook(name: str, method: str, path: str, summary: str, description: str, *, example: Mapping[str, Any],
             suffix: str | None = None, params: tuple[Param, ...] = ()) -> Operation:
    """A webhook operation: the collection's resource serves WEBHOOKS_PATH, the one webhook's the rest."""
    resource = "webhooks" if path == WEBHOOKS_PATH else "webhook"
    return Operation(name, method, path, "webhooks", resource, summary, description, example, suffix, params)


OPERATIONS: tuple[Operation, ...] = (
    *(_data(endpoint) for endpoint in ENDPOINTS),
    Operation("account", "GET", ACCOUNT_PATH, "account", "account", "Account",
              "Who the key belongs to: its subscription, plan, rate limit per minute, the endpoints the plan may "
              "call and the key's prefix (never the key itself). Any plan; the call counts against the rate "
              "limit. Takes no parameters.", {}),
    Operation("mint_token", "POST", TOKENS_PATH, "tokens", "tokens", "Mint a browser token",
              "A short-lived token for a web page: minted on your server with the subscription key, sent by the "
              "page as Authorization: Bearer <token>. It acts for the key's subscription (its plan, rate limit and "
              "privacy budget), only from its `origins` (the request's Origin header), only on its `endpoints`, with "
              "its `fixed` parameters, until it expires, and while the key works: revoking or expiring the key "
              "stops its tokens. A key sent with an Origin header is refused (403: keys are for servers); a token "
              "cannot mint tokens (403). Minting counts against the rate limit like any request.",
              TOKEN_EXAMPLE, params=TOKEN_FIELDS),
    _webhook("list_webhooks", "GET", WEBHOOKS_PATH, "List webhooks", "This key's subscription's webhooks (any plan).",
             example={}),
    _webhook("create_webhook", "POST", WEBHOOKS_PATH, "Create a webhook",
             f"A trending alert (payload trending_alert, signed per Standard Webhooks) is POSTed to `url` when a "
             f"value's growth_pct in GET /trending (same window, dimension, metric, min_baseline) exceeds "
             f"threshold_pct, at most once per cooldown. At most {MAX_WEBHOOKS_PER_SUBSCRIPTION} per subscription: "
             f"the next is refused with 409 ({problem_type(409, WEBHOOK_LIMIT)}).", params=FIELDS,
             example={"url": "https://example.com/hooks/signals", "window": "24h", "dimension": "keyword",
                      "threshold_pct": 200, "cooldown_minutes": 60}),
    _webhook("get_webhook", "GET", WEBHOOK_PATH, "Get a webhook", "One webhook (404 for another subscription's).",
             example=EXAMPLE_WEBHOOK),
    _webhook("update_webhook", "PATCH", WEBHOOK_PATH, "Update a webhook", "Change the fields given.",
             params=UPDATE_FIELDS, example={**EXAMPLE_WEBHOOK, "enabled": False}),
    _webhook("delete_webhook", "DELETE", WEBHOOK_PATH, "Delete a webhook", "Deletes it with its deliveries.",
             example=EXAMPLE_WEBHOOK),
    _webhook("test_webhook", "POST", WEBHOOK_PATH + "/test", "Send a test delivery",
             "Queues a signed trending_alert with no alerts; the worker process sends it within about a second and "
             "retries it like any delivery if it fails. Its attempts appear in `/deliveries` (the `Location` "
             "header) under the `delivery_id` answered here.", suffix="test", example=EXAMPLE_WEBHOOK),
    _webhook("list_webhook_deliveries", "GET", WEBHOOK_PATH + "/deliveries", "List delivery attempts",
             "Every attempt, newest first. Next page: `before` = the previous page's `next_before` (also in the "
             "Link header, rel=next).", suffix="deliveries", params=(DELIVERIES_LIMIT, DELIVERIES_BEFORE),
             example={**EXAMPLE_WEBHOOK, "limit": 20}),
    _webhook("rotate_webhook_secret", "POST", WEBHOOK_PATH + "/rotate-secret", "Rotate the signing secret",
             "A new secret, shown only in this response; the old one stops signing at once.", suffix="rotate",
             example=EXAMPLE_WEBHOOK),
)

BY_NAME = {operation.name: operation for operation in OPERATIONS}
