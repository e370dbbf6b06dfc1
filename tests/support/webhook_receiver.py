"""A real HTTP receiver for webhook tests: a ThreadingHTTPServer on 127.0.0.1 that records every
request (headers, body) and answers from a script of responses (status, delay, headers)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclasses.dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclasses.dataclass
class Answer:
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


class Receiver:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.received: list[Received] = []
        self.script: list[Answer] = []  # answers in order; the last one repeats
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hook"

    def next_answer(self) -> Answer:
        with self.lock:
            if not self.script:
                return Answer()
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.received) < count:
            time.sleep(0.02)
        return list(self.received)


@contextmanager
def receiver(*answers: Answer) -> Iterator[Receiver]:
    holder: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            rec = holder["r"]
            answer = rec.next_answer()
            with rec.lock:
                rec.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if answer.delay:
                time.sleep(answer.delay)
            try:
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:
                pass

        do_GET = do_POST  # a followed redirect would arrive as GET  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    rec = Receiver(server)
    rec.script = list(answers)
    holder["r"] = rec
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()
