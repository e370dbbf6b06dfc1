"""problem+json for the errors gunicorn answers itself, before the app sees the request.

gunicorn refuses some requests while parsing them: a request line past `limit_request_line`
(414), too many or too large header fields (431), malformed HTTP (400). It writes those answers
with `gunicorn.util.write_error`, as an HTML page. Every error a client of this API sees is
problem+json, so gunicorn.conf.py replaces that function in each worker with `write_problem`,
which takes the same arguments and writes the same status in our format. A test over the real
gunicorn (tests/api/test_http_edge_cases.py) fails if a gunicorn upgrade stops calling it.
"""

from __future__ import annotations

import json
import random
import socket

from service.http.errors import PROBLEM_JSON, problem_body, problem_title


def problem_response(status: int, reason: str, message: str) -> bytes:
    """A complete HTTP/1.1 response (the connection is closed after it, as gunicorn does)."""
    request_id = f"{random.getrandbits(128):032x}"
    detail = f"{message}." if message and not message.endswith(".") else (message or reason)
    body = json.dumps(problem_body(status, problem_title(status, reason), detail, (), request_id)).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: {PROBLEM_JSON}\r\n"
            f"Content-Length: {len(body)}\r\nX-Request-ID: {request_id}\r\n\r\n")
    return head.encode("latin-1") + body


def write_problem(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """Drop-in for `gunicorn.util.write_error(sock, status_int, reason, mesg)`."""
    from gunicorn import util

    util.write_nonblock(sock, problem_response(status_int, reason, mesg))


def install() -> None:
    """Make gunicorn write its own error answers as problem+json (called in each worker)."""
    from gunicorn import util

    util.write_error = write_problem
