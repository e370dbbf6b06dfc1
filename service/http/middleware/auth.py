"""Authentication (who is calling: 401) and tier (may they call this endpoint: 403).

The bearer credential is a subscription's key, or a browser token minted with one
(service/accounts/tokens.py): a token acts for the key that minted it (its subscription, plan,
rate limit and privacy budget), found in the same cache of accepted keys, and is refused when it
is not ours, when it has expired, or when that key no longer works. What a token may call, and
from where, is the next middleware's (token_scope.py). A resource opts out of authentication with
`auth_required = False` (health, OpenAPI). A resource that needs a minimum plan declares `min_tier`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import falcon

from cache import Gate
from service.accounts import AuthFailure, Principal
from service.accounts.cached import AccountsUnavailable, CachedAuthenticator
from service.accounts.tokens import TokenSigner, binds, looks_like_token
from service.api.windows import iso_z
from service.clock import Clock
from service.http.errors import Problem
from service.http.middleware.client_address import ClientAddress
from service.http.middleware.rate_limit import refuse_blocked_address, standing_headers

log = logging.getLogger("signals.auth")

_CHALLENGE = 'Bearer realm="signals"'


def _unauthorized(detail: str, *, invalid_token: bool, description: str | None = None) -> Problem:
    challenge = _CHALLENGE + (', error="invalid_token"' if invalid_token else "")
    if description is not None:  # RFC 6750 section 3: a human-readable reason (ASCII, no quotes)
        challenge += f', error_description="{description}"'
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
_MINT_AGAIN = "Mint a new one on your server with the subscription key: POST /api/v1/tokens."
_TOKEN_DETAIL = {
    AuthFailure.UNKNOWN: f"The token's API key is not known here. {_MINT_AGAIN}",
    AuthFailure.REVOKED: "The API key this token was minted with has been revoked: its tokens no longer work. "
                         f"{_GET_A_KEY}",
    AuthFailure.EXPIRED: "The API key this token was minted with has expired: its tokens no longer work. "
                         f"{_GET_A_KEY}",
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

    def __init__(self, accounts: CachedAuthenticator, gate: Gate, client_address: ClientAddress,
                 tokens: TokenSigner, clock: Clock) -> None:
        self._accounts = accounts
        self._gate = gate
        self._client_address = client_address
        self._tokens = tokens
        self._clock = clock

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object, params: dict) -> None:
        if resource is None or not getattr(resource, "auth_required", True):
            return
        token = bearer_token(req)
        if token is not None and looks_like_token(token):
            self._browser_token(req, token)
            return
        outcome = self._ask(lambda: self._accounts.authenticate(token))
        if isinstance(outcome, AuthFailure):
            if outcome is not AuthFailure.MISSING:
                self._count_failure(req)
            raise _unauthorized(failure_detail(outcome, token), invalid_token=outcome is not AuthFailure.MISSING)
        req.context.principal = outcome

    def _browser_token(self, req: falcon.Request, text: str) -> None:
        """A browser token: ours, not expired, and its key still good (else 401, counted as a
        wrong key is); then the key's principal, and the token for token_scope.py."""
        token = self._tokens.read(text)
        if token is None:
            self._count_failure(req)
            raise _unauthorized("The token is not valid: it was not issued by this API, or it was changed or cut "
                                f"short. {_MINT_AGAIN}", invalid_token=True)
        if token.expired(self._clock.now()):
            self._count_failure(req)
            raise _unauthorized(f"The token expired at {iso_z(token.expires_at)}. {_MINT_AGAIN}", invalid_token=True,
                                description="The token expired")
        outcome = self._ask(lambda: self._accounts.authenticate_key_id(token.key_id))
        if not isinstance(outcome, AuthFailure) and not binds(token, outcome.key_hash):
            outcome = AuthFailure.UNKNOWN  # another key has this id now
        if isinstance(outcome, AuthFailure):
            self._count_failure(req)
            raise _unauthorized(_TOKEN_DETAIL.get(outcome, _TOKEN_DETAIL[AuthFailure.UNKNOWN]), invalid_token=True)
        req.context.principal = outcome
        req.context.token = token

    @staticmethod
    def _ask(lookup: Callable[[], Principal | AuthFailure]) -> Principal | AuthFailure:
        try:
            return lookup()
        except AccountsUnavailable:  # logged once per outage by the authenticator
            raise Problem(503, "Keys cannot be checked right now; retry shortly.", headers={"Retry-After": "5"}) from None

    def _count_failure(self, req: falcon.Request) -> None:
        """A wrong credential counts against its address: past the limit, 429 instead of 401."""
        block = self._gate.record_auth_failure(self._client_address(req))
        if not block.allowed:
            refuse_blocked_address(block)


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
        raise Problem(
            403,
            f"{req.method} {req.path} requires the {minimum.label} plan or higher; "
            f"this key's subscription is on the {principal.tier.label} plan.",
            headers=standing_headers(self._gate, principal),
        )
