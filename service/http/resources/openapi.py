"""GET /api/v1/openapi: the machine-readable description. No key needed."""

from __future__ import annotations

import json
from typing import Any

import falcon

from service.api.openapi import build_openapi


class OpenApiResource:
    auth_required = False

    def __init__(self, **settings: Any) -> None:
        """`settings`: build_openapi's (the deployment's /query bound and compute deadline)."""
        self._body = json.dumps(build_openapi(**settings), indent=1).encode()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_JSON
        resp.data = self._body
