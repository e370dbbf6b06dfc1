"""Rate limit per subscription (429), in one gate round trip with the cache lookup.

Runs after authentication and tier (`admit`). The signals endpoints call `admit` themselves once
they have parsed the request (validated it, worked out its cache key): the gate counts the
request against the subscription's moving 60-second window and fetches the cached body, both at
once; every other rate-limited resource is admitted by the middleware, before its responder. (A
caller that got here holds a valid key: the block of an address after failed authentications
answers wrong keys only, see cache/fail.lua.) The rate-limit headers are computed per request,
here, and so are never part of a cached body.
"""

from __future__ import annotations

import falcon

from cache import Admission, Gate
from service.accounts import Principal
from service.http.errors import Problem
from service.privacy.budget import ledger_name


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


def standing_headers(gate: Gate, principal: Principal) -> dict[str, str]:
    """The subscription's rate-limit headers, looked up without counting the request: what a
    refusal before the rate limit (the plan's 403, a token's) carries, as every authenticated answer does."""
    standing = gate.peek(f"sub:{principal.subscription_id}", principal.tier.requests_per_minute)
    return dict(rate_limit_headers(standing, principal.tier.slug))


def admit(req: falcon.Request, resp: falcon.Response, gate: Gate, principal: Principal, key: str | None = None,
          identity: str | None = None, answer: str | None = None) -> Admission:
    """Count the request against the subscription's moving 60-second window (429 past it), in one
    gate round trip that also fetches the answer's cached body under `key`, counts `identity` among
    the requests asked recently, and reads what the subscription's privacy ledger says of `answer`
    (service/privacy/budget.py: an answer already paid for is then served without another round
    trip). The rate-limit headers go on the response, refused or not."""
    ledger = ledger_name(principal.subscription_id, req.context.now) if answer else None
    admission = gate.admit(f"sub:{principal.subscription_id}", principal.tier.requests_per_minute, key, identity,
                           ledger, answer)
    req.context.admission = admission
    headers = rate_limit_headers(admission, principal.tier.slug)
    resp.set_headers(headers)
    if admission.allowed:
        return admission
    detail = (f"The {principal.tier.label} plan allows {admission.limit} requests per minute "
              f"for the subscription; retry after {admission.retry_after} s.")
    raise Problem(429, detail, headers={**dict(headers), "Retry-After": str(admission.retry_after)})


class RateLimitMiddleware:
    """The rate limit of every resource whose `rate_limited` is true, after authentication and tier.
    A resource that `admits_itself` (the signals endpoints: service/http/resources/signals.py) calls
    `admit` with its answer's cache key once it has parsed the request, so that one round trip
    counts the request and fetches the cached body; the middleware never calls into a resource."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object, params: dict) -> None:
        principal = getattr(req.context, "principal", None)
        if principal is None or not getattr(resource, "rate_limited", False) or getattr(resource, "admits_itself", False):
            return
        admit(req, resp, self._gate, principal)


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
