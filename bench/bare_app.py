"""The baseline for bench/bench_cached.py: a bare Falcon app that returns the same bytes as our
cached endpoint, with no auth, no rate limit and no cache. Served by the same gunicorn config."""

import os

import falcon

with open(os.environ["BENCH_BODY_FILE"], "rb") as handle:
    BODY = handle.read()


class Fixed:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_JSON
        resp.data = BODY


app = falcon.App()
app.add_route("/api/v1/signals/top-keywords", Fixed())
