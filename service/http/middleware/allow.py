"""One `Allow` list per resource, whichever way it is asked.

Falcon's 405 answer lists the resource's methods with OPTIONS (it answers OPTIONS by itself),
while its OPTIONS answer lists them without it. A client must not get two different answers to
"what may I send here?", so an OPTIONS answer names OPTIONS too.
"""

from __future__ import annotations

import falcon


class AllowHeaderMiddleware:
    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        if req.method != "OPTIONS":
            return
        allow = resp.get_header("Allow")
        if allow and "OPTIONS" not in (m.strip() for m in allow.split(",")):
            resp.set_header("Allow", f"{allow}, OPTIONS")
