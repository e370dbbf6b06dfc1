"""GET /api/v1/openapi: the machine-readable description. No key needed."""

from __future__ import annotations

import json

import falcon

from service.openapi import build_openapi


class OpenApiResource:
    auth_required = False

    def __init__(self) -> None:
        self._body = json.dumps(build_openapi(), indent=1).encode()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_JSON
        resp.data = self._body
