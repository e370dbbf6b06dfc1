"""Where each credential may be used (403): a browser token from its origins only, on its data
endpoints only, and never to mint tokens; a subscription's key never from a web page.

After authentication (auth.py), before the plan's tier and the rate limit. A browser sends an
Origin header with every cross-origin request (and with every POST), so a key sent with one is a
key put in a page, where anyone can read it: it is refused, pointing at POST /api/v1/tokens. A
token (service/accounts/tokens.py) names its origins; a request with it and no Origin, or another
one, is refused. Its fixed parameters are applied where the request is parsed
(service/http/resources/fixed.py). Each refusal carries the subscription's rate-limit headers, as
the plan's 403 does, and the CORS headers (cors.py), so that the page can read why.
"""

from __future__ import annotations

from typing import Any, NoReturn

import falcon

from cache import Gate
from service.accounts import Principal
from service.accounts.tokens import BrowserToken
from service.http.errors import CREDENTIAL_NOT_ALLOWED, Problem
from service.http.middleware.rate_limit import standing_headers

KEY_FROM_A_PAGE = ("An API key sent from a web page is refused: keys are for servers; mint a token at POST "
                   "/api/v1/tokens with the key on your server, and call the API from the page with the token. (This "
                   "request carries an Origin header, as a browser sends it; a key in a page can be read by anyone "
                   "who opens the page.)")


class TokenScopeMiddleware:
    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object, params: dict[str, Any]) -> None:
        principal: Principal | None = getattr(req.context, "principal", None)
        if principal is None:
            return
        token: BrowserToken | None = getattr(req.context, "token", None)
        origin = req.get_header("Origin")
        if token is None:
            if origin is not None:
                self._refuse(principal, KEY_FROM_A_PAGE)
            return
        allowed = ", ".join(token.origins)
        if origin is None:
            self._refuse(principal, f"This token works only from a web page at {allowed}, and the request carries no "
                                    "Origin header (a browser sends one). Servers call the API with the key itself.")
        if origin not in token.origins:
            self._refuse(principal, f"This token works only from {allowed}; this request comes from {origin}. "
                                    "Mint a token for this origin (origins in POST /api/v1/tokens).")
        if getattr(resource, "mints_tokens", False):
            self._refuse(principal, "A token cannot mint tokens: mint them on your server with the subscription key "
                                    "(POST /api/v1/tokens).")
        endpoint = getattr(resource, "endpoint", None)  # the data endpoints' resources (resources/signals.py)
        name = getattr(endpoint, "name", None)
        if name not in token.endpoints:
            what = f"{req.method} {req.path}" + (f" ({name})" if name else "")
            self._refuse(principal, f"This token may call only {', '.join(token.endpoints)}, not {what}. Mint a "
                                    "token that lists it (endpoints in POST /api/v1/tokens); the account and its "
                                    "webhooks take the key itself.")

    def _refuse(self, principal: Principal, detail: str) -> NoReturn:
        raise Problem(403, detail, kind=CREDENTIAL_NOT_ALLOWED, headers=standing_headers(self._gate, principal))
