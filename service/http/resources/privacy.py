"""GET /api/v1/privacy (no key): what the release publishes and the bound it keeps, as the
accountant computes it (service/release/accountant.py) — the unit, the bounds, the tables, the
schedule and epsilon per user-day and per user-month."""

from __future__ import annotations

import json
import threading

import falcon

from service.release.statement import privacy_statement


class PrivacyResource:
    auth_required = False

    def __init__(self) -> None:
        self._body: bytes | None = None
        self._lock = threading.Lock()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        del req
        if self._body is None:
            with self._lock:  # the accountant composes a few hundred mechanisms: once a process
                if self._body is None:
                    self._body = json.dumps(privacy_statement(), indent=1).encode()
        resp.content_type = falcon.MEDIA_JSON
        resp.cache_control = ["public", "max-age=3600"]
        resp.data = self._body
