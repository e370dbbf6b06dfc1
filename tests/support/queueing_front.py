"""An HTTP front for the API that records its answers to `POST /api/v1/account/webhooks/{id}/test`
(202 `{"delivery_id": ..., "attempt": null}`: the worker sends the test). Everything else is
relayed as it is.

`mode="queued"`: the test request is relayed too (the API queues it; the test's worker sends it).
`mode="never"`: it is not relayed, and the delivery_id is one that never appears in the log (a
worker that is not running)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

NEVER_SENT = "dlv_never_sent_by_any_worker"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


@contextlib.contextmanager
def queueing_front(api_url: str, mode: str = "queued") -> Iterator[tuple[str, list[str]]]:
    """Serves on a free port of 127.0.0.1; yields its URL and the list of test requests it answered."""
    assert mode in ("queued", "never")
    answered: list[str] = []
    upstream = httpx.Client(base_url=api_url, timeout=30)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP]
            is_test = self.command == "POST" and self.path.split("?")[0].endswith("/test")
            if is_test and mode == "never":
                status, content, out_headers = 202, {"delivery_id": NEVER_SENT, "attempt": None}, []
            else:
                response = upstream.request(self.command, self.path, content=body, headers=headers)
                status, out_headers = response.status_code, [
                    (k, v) for k, v in response.headers.multi_items() if k.lower() not in _HOP_BY_HOP]
                content = response.content
            if is_test:
                answered.append(f"{status} {content}")
            raw = json.dumps(content).encode() if isinstance(content, dict) else content
            if isinstance(content, dict):
                out_headers = [(k, v) for k, v in out_headers if k.lower() != "content-type"]
                out_headers.append(("Content-Type", "application/json"))
            self.send_response(status)
            for key, value in out_headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PATCH = do_DELETE = _relay  # noqa: N815 (http.server's naming)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", answered
    finally:
        server.shutdown()
        server.server_close()
        upstream.close()
