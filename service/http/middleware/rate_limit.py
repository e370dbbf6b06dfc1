"""Rate limit per subscription (429), in one gate round trip with the cache lookup.

Runs after authentication and tier. For a rate-limited resource it asks the resource to
`prepare` (validate, work out the cache key), then asks the gate to count the request against
the subscription's moving 60-second window and fetch the cached body — both at once. (A caller
that got here holds a valid key: the block of an address after failed authentications answers
wrong keys only, see cache/fail.lua.) The rate-limit headers are
computed per request, here, and so are never part of a cached body.
"""

from __future__ import annotations

from typing import Protocol, cast

import falcon

from cache import Admission, Gate
from service.http.errors import Problem
from service.privacy.budget import ledger_name


class _Prepared(Protocol):
    @property
    def key(self) -> str | None: ...


class _RateLimited(Protocol):
    """A resource whose `rate_limited` is true (service/http/resources/signals.py `SignalsResource`)."""

    def prepare(self, req: falcon.Request) -> _Prepared: ...


def rate_limit_headers(admission: Admission, policy: str) -> list[tuple[str, str]]:
    remaining, reset = str(admission.remaining), str(admission.reset_seconds)
    return [
        # IETF httpapi RateLimit header fields (draft 10): quota q per window w; remaining r, reset t.
        ("RateLimit-Policy", f'"{policy}";q={admission.limit};w={admission.window_seconds}'),
        ("RateLimit", f'"{policy}";r={remaining};t={reset}'),
        ("X-RateLimit-Limit", str(admission.limit)),
        ("X-RateLimit-Remaining", remaining),
        ("X-RateLimit-Reset", reset),
    ]


class RateLimitMiddleware:
    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object, params: dict) -> None:
        principal = getattr(req.context, "principal", None)
        if principal is None or not getattr(resource, "rate_limited", False):
            return
        prepared = cast(_RateLimited, resource).prepare(req)
        # An answer (service/privacy/budget.py) is looked up in the subscription's privacy ledger in
        # the same round trip: an answer already paid for is then served without another.
        answer = getattr(prepared, "answer", None)
        admission = self._gate.admit(f"sub:{principal.subscription_id}", principal.tier.requests_per_minute, prepared.key,
                                     getattr(prepared, "identity", None),
                                     ledger_name(principal.subscription_id, req.context.now) if answer else None, answer)
        req.context.admission = admission
        headers = rate_limit_headers(admission, principal.tier.slug)
        resp.set_headers(headers)
        if admission.allowed:
            return
        detail = (f"The {principal.tier.label} plan allows {admission.limit} requests per minute "
                  f"for the subscription; retry after {admission.retry_after} s.")
        raise Problem(429, detail, headers={**dict(headers), "Retry-After": str(admission.retry_after)})


def refuse_blocked_address(block: Admission) -> None:
    """The 429 a wrong key gets from an address blocked for failed authentications (no rate-limit
    headers, the block's own Retry-After)."""
    raise Problem(
        429,
        f"Too many failed authentications from this address: {block.limit} requests with a wrong or malformed "
        f"API key within {block.window_seconds} seconds. Requests with a wrong key from this address are refused "
        f"for the next {block.retry_after} s (Retry-After), a valid key is served meanwhile. The key sent is not "
        f"valid: send the whole key (sig_live_ followed by 40 letters and digits), and check it with "
        f"GET /api/v1/account.",
        headers={"Retry-After": str(block.retry_after)})
