"""CORS (the Fetch standard's cross-origin protocol) on every API path, for web pages that call
the API with a browser token.

- A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered 204 at
  once, before authentication (a browser sends it without credentials), allowing GET and POST
  with the Authorization, Content-Type and If-None-Match request headers, for
  `Access-Control-Max-Age` seconds (SIGNALS_CORS_MAX_AGE_SECONDS). An OPTIONS without those
  headers is answered as before (200 and Allow: allow.py).
- Every answer to a request with an `Origin` carries `Access-Control-Allow-Origin` (that origin)
  and `Access-Control-Expose-Headers` (the headers a page needs: paging, caching, limits, the
  budget, as_of, the request id), errors included, so a page can read why it was refused. Every
  API answer says `Vary: Origin`.

Which origins may call is not decided here: it depends on the token, which the preflight does not
carry. A token is refused from any origin but its own, and a key from any page
(token_scope.py), so the only successful answers a page can read are its own token's (and the
public OpenAPI document). That is why Falcon's `CORSMiddleware` does not fit: it allows a fixed
list of origins for everything, reflects whatever request headers a preflight asks for, answers
preflights 200 through the resource's OPTIONS and fixes the max-age. No
`Access-Control-Allow-Credentials`: a bearer token is not a cookie.
"""

from __future__ import annotations

from typing import Any

import falcon

from service.api.paging import TOTAL_HEADER
from service.http.middleware.request_id import HEADER as REQUEST_ID_HEADER
from service.privacy.budget import HEADER as BUDGET_HEADER

API_PREFIX = "/api/"
ALLOW_METHODS = "GET, POST"
ALLOW_HEADERS = "Authorization, Content-Type, If-None-Match"
EXPOSE_HEADERS = ", ".join((
    "ETag", "Link", "Retry-After", "RateLimit", "RateLimit-Policy", TOTAL_HEADER, BUDGET_HEADER, "X-Signals-As-Of",
    "Content-Disposition", "X-Signals-Disclaimer", REQUEST_ID_HEADER))


class CorsMiddleware:
    def __init__(self, max_age_seconds: int) -> None:
        self._max_age = str(max_age_seconds)

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object, params: dict[str, Any]) -> None:
        """Answer a preflight on a route of the API (an unknown path stays 404)."""
        if (req.method == "OPTIONS" and req.path.startswith(API_PREFIX) and req.get_header("Origin") is not None
                and req.get_header("Access-Control-Request-Method") is not None):
            resp.status = falcon.HTTP_204
            resp.set_headers((
                ("Access-Control-Allow-Methods", ALLOW_METHODS),
                ("Access-Control-Allow-Headers", ALLOW_HEADERS),
                ("Access-Control-Max-Age", self._max_age),
            ))
            resp.complete = True  # no authentication, no responder

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        if not req.path.startswith(API_PREFIX):
            return
        resp.append_header("Vary", "Origin")
        origin = req.get_header("Origin")
        if origin is None:
            return
        resp.set_header("Access-Control-Allow-Origin", origin)
        resp.set_header("Access-Control-Expose-Headers", EXPOSE_HEADERS)
