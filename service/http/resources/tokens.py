"""POST /api/v1/tokens: a subscription's key mints a short-lived browser token for a web page.

The caller's server mints (with the key, which never reaches a page) and hands the token to the
page, which calls the data endpoints with it from its origin. The request goes through the same
path as every authenticated one: authentication (401), a browser token or an Origin header
refused (403, service/http/middleware/token_scope.py), the rate limit (429: minting counts
against the subscription's requests per minute), then the body (400, and 403 for an endpoint
above the plan: service/api/token_fields.py). The answer holds a credential, so it is never
stored by a cache (`Cache-Control: no-store`).
"""

from __future__ import annotations

import datetime as dt
import json

import falcon

from paramcheck import FieldError, summary
from service.accounts import Principal
from service.accounts.tokens import MAX_TOKEN_LENGTH, BrowserToken, TokenSigner, key_binding
from service.api.params import ValidationFailed
from service.api.token_fields import PlanLacks, token_request
from service.api.windows import iso_z
from service.clock import Clock
from service.http.errors import Problem
from service.http.resources.json_body import read_json_body


class TokensResource:
    rate_limited = True
    mints_tokens = True  # a browser token may not call it (service/http/middleware/token_scope.py)

    def __init__(self, signer: TokenSigner, clock: Clock) -> None:
        self._signer = signer
        self._clock = clock

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal: Principal = req.context.principal
        assert principal.key_id is not None and principal.key_hash is not None  # the store's principals have both
        try:
            asked = token_request(read_json_body(req), principal.tier)
        except ValidationFailed as exc:
            raise Problem(400, summary(exc.errors), errors=exc.errors) from None
        except PlanLacks as exc:
            raise Problem(403, exc.detail, errors=exc.errors) from None
        now = self._clock.now().replace(microsecond=0)
        expires = now + dt.timedelta(seconds=asked.ttl_seconds)
        if principal.expires_at is not None:  # a token never outlives its key
            expires = min(expires, principal.expires_at.replace(microsecond=0))
        token = self._signer.sign(BrowserToken(principal.key_id, key_binding(principal.key_hash), asked.origins,
                                               asked.endpoints, asked.fixed, now, expires))
        if len(token) > MAX_TOKEN_LENGTH:
            error = FieldError("fixed" if asked.fixed else "origins",
                               f"makes a token of {len(token):,} characters, more than the {MAX_TOKEN_LENGTH:,} a "
                               f"header carries safely; fix fewer or shorter values, or list fewer origins")
            raise Problem(400, summary([error]), errors=[error])
        resp.status = falcon.HTTP_201
        resp.content_type = falcon.MEDIA_JSON
        resp.set_header("Cache-Control", "no-store")
        resp.data = json.dumps({"token": token, "expires_at": iso_z(expires), "origins": list(asked.origins),
                                "endpoints": list(asked.endpoints), "fixed": asked.fixed},
                               separators=(",", ":")).encode()
