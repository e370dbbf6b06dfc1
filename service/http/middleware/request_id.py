"""Give every request an id (or keep a sane one the caller sent) and echo it in X-Request-ID."""

from __future__ import annotations

import random
import re

import falcon

HEADER = "X-Request-ID"
_SANE = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")


class RequestIdMiddleware:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        sent = req.get_header(HEADER)
        # Request ids need to be unique, not secret: a PRNG (reseeded by Python in every forked
        # worker) avoids a kernel call per request.
        req.context.request_id = sent if sent and _SANE.match(sent) else f"{random.getrandbits(128):032x}"
        resp.set_header(HEADER, req.context.request_id)
