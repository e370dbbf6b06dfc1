"""GET /api/v1/account: who am I. The key's subscription, plan, rate limit, the endpoints the plan
may call and the key's prefix (never the key or its hash).

Consumers (the client, the Sheets connector, the MCP server, the dashboard) call it to learn what a
key may do before doing anything. It goes through the same request path as every endpoint:
authentication (401), rate limit (429, the call counts), then the query string (400: it takes no
parameters). The answer is per key, so it is never put in the shared response cache; it carries an
ETag so that a client that asks again can get 304, and the subscription's privacy budget in the
`Signals-Privacy-Budget` header (service/privacy/budget.py; asking it charges nothing).
"""

from __future__ import annotations

import json
from typing import Any

import falcon

from paramcheck import summary
from service.accounts import Principal
from service.answers.etags import etag_for, if_none_match
from service.api.disclaimer import DISCLAIMER
from service.api.endpoints import ENDPOINTS
from service.api.params import ValidationFailed, parse_query
from service.api.windows import iso_z
from service.clock import Clock, SystemClock
from service.http.errors import Problem
from service.privacy.budget import PrivacyBudget


def account_body(principal: Principal) -> dict[str, Any]:
    tier = principal.tier
    return {
        "subscription": principal.subscription_name,
        "plan": tier.slug,
        "plan_label": tier.label,
        "requests_per_minute": tier.requests_per_minute,
        "endpoints": [
            {"operation": e.name, "method": e.method, "path": e.full_path}
            for e in ENDPOINTS if tier.allows(e.min_tier)
        ],
        "key_prefix": principal.key_prefix,
        "key_expires_at": iso_z(principal.expires_at) if principal.expires_at else None,
        "disclaimer": DISCLAIMER,
    }


class AccountResource:
    rate_limited = True

    def __init__(self, budget: PrivacyBudget | None = None, clock: Clock | None = None) -> None:
        # The subscription's privacy budget, shown in its header (charging nothing).
        self._budget = budget if budget is not None and budget.enabled else None
        self._clock = clock or SystemClock()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        try:  # after the rate limit (the middleware's): 401 -> 429 -> 400
            parse_query((), req.params)
        except ValidationFailed as exc:
            raise Problem(400, summary(exc.errors), errors=exc.errors) from None
        body = json.dumps(account_body(req.context.principal), separators=(",", ":")).encode()
        etag = etag_for(body)
        resp.set_header("ETag", etag)
        resp.set_header("Cache-Control", "private, no-cache")
        resp.append_header("Vary", "Authorization")
        if self._budget is not None:
            resp.set_header(*self._budget.state(req.context.principal.subscription_id, self._clock.now()).header())
        if if_none_match(req.get_header("If-None-Match"), etag):
            resp.status = falcon.HTTP_304
            return
        resp.content_type = falcon.MEDIA_JSON
        resp.data = body
