"""Reading a JSON request body: at most 64 KiB, with or without Content-Length, every key once.

A body may come with a Content-Length or chunked (`Transfer-Encoding: chunked`, as curl, httpx
with a generator and `http.client` with `encode_chunked=True` send it). Falcon's
`bounded_stream` reads nothing when there is no Content-Length, so a chunked body is read from
the server's input stream directly, with the same bound. That is safe only when the server ends
the stream at the end of the body (`wsgi.input_terminated`, which gunicorn sets); elsewhere a
read past the body would wait for bytes that never come, so such a server gets 411 instead.

JSON itself allows an object to repeat a key and Python keeps the last value; we refuse it, as
we refuse a repeated query parameter, because the caller clearly meant something we would
silently ignore.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import falcon

from paramcheck import FieldError, HugeNumber
from service.http.errors import Problem

MAX_BODY_BYTES = 64 * 1024
_REPEATED = "must be given once; it was repeated"


def read_json_body(req: falcon.Request) -> Any:
    """The request body as JSON: 415 unless JSON, 413 over 64 KiB, 400 when malformed, empty or
    repeating a key, 411 when chunked on a server that cannot tell where the body ends."""
    media = (req.content_type or "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        raise Problem(415, "Send the request body as JSON with 'Content-Type: application/json'.")
    raw = _read_bounded(req)
    if not raw.strip():
        raise Problem(400, "The request body is empty; send a JSON object, e.g. {\"window\": \"24h\"}.",
                      errors=[FieldError("body", "is empty")])
    try:
        body = json.loads(raw, object_pairs_hook=_object, parse_int=_integer, parse_float=_float)
    except UnicodeDecodeError:
        raise Problem(400, "The request body is not valid UTF-8.", errors=[FieldError("body", "is not valid UTF-8")]) from None
    except json.JSONDecodeError as exc:
        reason = f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        raise Problem(400, f"The request body {reason}.", errors=[FieldError("body", reason)]) from None
    except RecursionError:
        reason = "is nested too deeply"
        raise Problem(400, f"The request body {reason}.", errors=[FieldError("body", reason)]) from None
    repeated = repeated_keys(body)
    if repeated:
        names = ", ".join(f"'{name}'" for name in repeated)
        raise Problem(400, f"The request body repeats {names}; give each field once.",
                      errors=[FieldError(name, _REPEATED) for name in repeated])
    return body


_STALLED = (TimeoutError, ConnectionResetError)  # what the server's input raises when the client stops sending


def _stalled() -> Problem:
    return Problem(408, "The request body did not arrive in time; send the whole request again.",
                   errors=[FieldError("body", "stopped arriving before its end")])


def _integer(text: str) -> int | HugeNumber:
    """A JSON integer; one past Python's digit limit stays text (json would raise ValueError), so
    that the field it was sent for is named in the 400."""
    return int(text) if len(text) <= _MAX_DIGITS else HugeNumber(text)


_MAX_DIGITS = sys.get_int_max_str_digits() or 4300


def _float(text: str) -> float | HugeNumber:
    """A JSON number with a fraction or exponent; one beyond a float's range (1e400, which would
    read as inf) stays text, so that the 400 echoes what was sent."""
    value = float(text)
    return value if math.isfinite(value) else HugeNumber(text)


def _read_bounded(req: falcon.Request) -> bytes:
    """Up to MAX_BODY_BYTES of the body; 413 past that, whether announced or found while reading;
    408 when the client stops sending before its end (service/server/gunicorn_worker.py times it out)."""
    try:
        return _read_bounded_body(req)
    except _STALLED:
        raise _stalled() from None


def _read_bounded_body(req: falcon.Request) -> bytes:
    if req.content_length is not None:
        if req.content_length > MAX_BODY_BYTES:
            raise Problem(413, f"The request body is {req.content_length} bytes; at most {MAX_BODY_BYTES} are accepted.")
        raw = req.bounded_stream.read(MAX_BODY_BYTES + 1)
    elif "chunked" in (req.get_header("Transfer-Encoding") or "").lower():
        if not req.env.get("wsgi.input_terminated"):
            raise Problem(411, "This server cannot read a chunked request body; send it with a Content-Length.")
        raw = _read_terminated(req.stream, MAX_BODY_BYTES + 1)
    else:
        raw = b""
    if len(raw) > MAX_BODY_BYTES:
        raise Problem(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    return raw


def _read_terminated(stream: Any, limit: int) -> bytes:
    """Read until the end of the body or `limit` bytes, whichever comes first. A stream may
    return less than asked before its end, hence the loop."""
    parts: list[bytes] = []
    size = 0
    try:
        while size < limit:
            part = stream.read(limit - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
    except _STALLED:
        raise
    except Exception:  # the server's framing errors (a bad chunk size, a body cut short) have no common base
        raise Problem(400, "The chunked request body is malformed or ended early.",
                      errors=[FieldError("body", "is not valid chunked transfer coding")]) from None
    return b"".join(parts)


class _RepeatedKeys(dict):
    """A JSON object that repeated some of its keys (kept: the last value, as json does)."""

    repeated: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    repeated: dict[str, None] = {}  # ordered, each name once however often it came
    for key, _ in pairs:
        if key in seen:
            repeated[key] = None
        seen.add(key)
    marked = _RepeatedKeys(result)
    marked.repeated = tuple(repeated)
    return marked


def repeated_keys(value: Any) -> list[str]:
    """Paths of the keys repeated anywhere in a decoded body ('window', 'filters.keywords',
    'group_by[0].x'), in document order. Iterative: the body may be nested as deep as json
    allowed, and this must not run out of stack where json did not."""
    found: list[str] = []
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, dict):
            if isinstance(item, _RepeatedKeys):
                found.extend(f"{path}.{key}" if path else key for key in item.repeated)
            pending.extend((f"{path}.{key}" if path else key, child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            pending.extend((f"{path}[{index}]", child) for index, child in reversed(list(enumerate(item))))
    return found
