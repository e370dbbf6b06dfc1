"""Authentication (who is calling: 401) and tier (may they call this endpoint: 403).

A resource opts out of authentication with `auth_required = False` (health, OpenAPI). A resource
that needs a minimum plan declares `min_tier`.
"""

from __future__ import annotations

import logging

import falcon

from cache import Gate
from service.accounts import AuthFailure, Principal
from service.accounts.cached import AccountsUnavailable, CachedAuthenticator
from service.http.errors import Problem
from service.http.middleware.client_address import ClientAddress
from service.http.middleware.rate_limit import rate_limit_headers, refuse_blocked_address

log = logging.getLogger("signals.auth")

_CHALLENGE = 'Bearer realm="signals"'


def _unauthorized(detail: str, *, invalid_token: bool) -> Problem:
    challenge = _CHALLENGE + (', error="invalid_token"' if invalid_token else "")
    return Problem(401, detail, headers={"WWW-Authenticate": challenge})


# The next step after each failure: where a key comes from, and how to check one.
_GET_A_KEY = ("Keys are issued with a subscription by the API's operator (python -m service keys create; on the demo, "
              "./scripts/run.sh prints one).")
_CHECK_A_KEY = "GET /api/v1/account with a key says whether it works and its plan."
_FAILURE_DETAIL = {
    AuthFailure.MISSING: f"Send your API key in the Authorization header: 'Authorization: Bearer <key>'. {_GET_A_KEY}",
    AuthFailure.MALFORMED: "The API key is malformed. Keys look like sig_live_ followed by 40 letters and digits: "
                           f"send the whole key. {_CHECK_A_KEY}",
    AuthFailure.UNKNOWN: "The API key is not valid: no key like it was issued here. Check that you sent the whole "
                         f"key, copied from where it was issued, and this API's address. {_CHECK_A_KEY} {_GET_A_KEY}",
    AuthFailure.REVOKED: f"The API key has been revoked; ask for a new one. {_GET_A_KEY}",
    AuthFailure.EXPIRED: f"The API key has expired; ask for a new one. {_GET_A_KEY}",
}
# A key's public prefix (sig_live_ and 7 characters, as `keys list` and the account show it) sent as the key.
_PREFIX_LENGTH = 16


def failure_detail(outcome: AuthFailure, token: str | None) -> str:
    """The 401's detail: what is wrong with the key sent, and what to do next."""
    if outcome is AuthFailure.MALFORMED and token is not None and token.startswith("sig_live_") \
            and len(token) == _PREFIX_LENGTH:
        return (f"The API key is malformed: {_PREFIX_LENGTH} characters is a key's public prefix (as keys list "
                "shows it), not the key. Send the whole key: sig_live_ followed by 40 letters and digits. "
                + _CHECK_A_KEY)
    return _FAILURE_DETAIL[outcome]


def bearer_token(req: falcon.Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None when absent.
    Raises a 401 problem for another scheme."""
    header = req.get_header("Authorization")
    if not header or not header.strip():
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise _unauthorized("Use the Bearer scheme: 'Authorization: Bearer <key>'.", invalid_token=True)
    return token.strip()


class AuthenticationMiddleware:
    """401 for a missing or bad key. Failed attempts are counted per client address; past the
    limit the address's wrong keys get 429 until the window clears, so keys cannot be tried
    quickly. A valid key is served whatever its address did: one address is often many clients
    (a NAT, a corporate proxy, the dashboard, the MCP server)."""

    def __init__(self, accounts: CachedAuthenticator, gate: Gate, client_address: ClientAddress) -> None:
        self._accounts = accounts
        self._gate = gate
        self._client_address = client_address

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object, params: dict) -> None:
        if resource is None or not getattr(resource, "auth_required", True):
            return
        token = bearer_token(req)
        try:
            outcome = self._accounts.authenticate(token)
        except AccountsUnavailable:  # logged once per outage by the authenticator
            raise Problem(503, "Keys cannot be checked right now; retry shortly.", headers={"Retry-After": "5"}) from None
        if isinstance(outcome, AuthFailure):
            if outcome is not AuthFailure.MISSING:
                block = self._gate.record_auth_failure(self._client_address(req))
                if not block.allowed:
                    refuse_blocked_address(block)
            raise _unauthorized(failure_detail(outcome, token), invalid_token=outcome is not AuthFailure.MISSING)
        req.context.principal = outcome


class TierMiddleware:
    """403 when the key's plan is below the endpoint's. The refusal still answers like every
    authenticated response (the subscription's rate-limit headers, nothing counted)."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object, params: dict) -> None:
        minimum = getattr(resource, "min_tier", None)
        principal: Principal | None = getattr(req.context, "principal", None)
        if minimum is None or principal is None or principal.tier.allows(minimum):
            return
        standing = self._gate.peek(f"sub:{principal.subscription_id}", principal.tier.requests_per_minute)
        headers = rate_limit_headers(standing, principal.tier.slug)
        raise Problem(
            403,
            f"{req.method} {req.path} requires the {minimum.label} plan or higher; "
            f"this key's subscription is on the {principal.tier.label} plan.",
            headers=dict(headers),
        )
