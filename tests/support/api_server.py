"""The API for the connectors' tests: the app in-process (httpx's WSGI transport), a real HTTP
server on a free port of 127.0.0.1 serving it from a thread, and a flaky front for that server that
drops connections or answers 503 before passing requests on."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import wsgiref.simple_server
from collections.abc import Iterator
from pathlib import Path

import falcon
import httpx

from cache import LocalGate
from service.accounts import AccountStore
from service.app import create_app
from service.clock import FixedClock
from service.engine.polars import PolarsEngine as Engine
from service.privacy import Privacy
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.secret import TEST_SECRET

BASE_URL = "http://signals.test"


class Ticker:
    """A monotonic clock for the rate-limit gate that moves only when a test (or the client's
    sleep) says so."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def make_app(data_dir: Path, store: EventStore, accounts: AccountStore, ticker: Ticker) -> falcon.App:
    return create_app(Settings(data_dir=data_dir, secret=TEST_SECRET), clock=FixedClock(FIXTURE_NOW), store=store, accounts=accounts,
                      gate=LocalGate(clock=ticker), engine=Engine(Privacy.exact()))


class Recorder(httpx.BaseTransport):
    """Passes requests to another transport and keeps them (and the responses' statuses)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.requests: list[httpx.Request] = []
        self.statuses: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = self.inner.handle_request(request)
        self.statuses.append(response.status_code)
        return response


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


@contextlib.contextmanager
def serve(app: falcon.App) -> Iterator[str]:
    """The app over real HTTP on 127.0.0.1 (a free port) from a thread; yields its base URL."""
    server = wsgiref.simple_server.make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer,
                                               handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


_UNAVAILABLE = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
                b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s")
_UNAVAILABLE_BODY = (b'{"type": "urn:signals:problem:service-unavailable", "title": "Service unavailable", '
                     b'"status": 503, "detail": "Down for a moment.", "request_id": "front", "disclaimer": "x"}')


class FlakyFront:
    """A TCP front for a server: each of the next connections listed in `plan` is dropped after
    its request was read ("drop") or answered with a 503 problem ("503"); later ones are relayed."""

    def __init__(self, backend: str) -> None:
        host, port = backend.removeprefix("http://").split(":")
        self._backend = (host, int(port))
        self.plan: list[str] = []
        self.seen: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stopped = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            action = self.plan.pop(0) if self.plan else "relay"
            self.seen.append(action)
            threading.Thread(target=self._handle, args=(conn, action), daemon=True).start()

    def _handle(self, conn: socket.socket, action: str) -> None:
        with conn:
            request = _read_request(conn)
            if action == "drop":
                return
            if action == "503":
                conn.sendall(_UNAVAILABLE % (len(_UNAVAILABLE_BODY), _UNAVAILABLE_BODY))
                return
            with socket.create_connection(self._backend) as upstream:
                upstream.sendall(request)
                while chunk := upstream.recv(65536):
                    conn.sendall(chunk)

    def close(self) -> None:
        self._stopped = True
        self._listener.close()


def _read_request(conn: socket.socket) -> bytes:
    """Head and body of one request (Content-Length bodies only), rewritten to close after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
    for line in lines:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < length:
        body += conn.recv(65536)
    return b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n" + body
