"""The baseline for bench/bench_cached.py: a bare Falcon app that returns the same bytes as our
cached endpoint, with no auth, no rate limit and no cache. Served by the same gunicorn config.

BENCH_BODY_FILE: the body to return. BENCH_HEADERS_FILE (optional): a JSON list of
[name, value] response headers to return as well, copied from one of our responses, so that the
baseline also sends the same headers (gunicorn's cost per header is then the same on both sides)."""

import json
import os

import falcon

with open(os.environ["BENCH_BODY_FILE"], "rb") as handle:
    BODY = handle.read()
HEADERS: list[tuple[str, str]] = []
if os.environ.get("BENCH_HEADERS_FILE"):
    with open(os.environ["BENCH_HEADERS_FILE"]) as handle:
        HEADERS = [(name, value) for name, value in json.load(handle)]


class Fixed:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_JSON
        if HEADERS:
            resp.set_headers(HEADERS)
        resp.data = BODY


app = falcon.App()
app.add_route("/api/v1/signals/top-keywords", Fixed())
