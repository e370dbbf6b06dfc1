"""What every answer of the dashboard's server carries, and how it refuses a malformed request.

- Anti-framing: `X-Frame-Options: DENY` and `Content-Security-Policy: frame-ancestors 'none'` on
  every response, so no other site can show the dashboard in a frame (clickjacking: a signed-in
  viewer tricked into pressing "Delete" or "Rotate secret" under a decoy).
- `POST /_dash-update-component` bodies are checked before Dash reads them: a JSON object naming a
  callback the app has (`output`), with `outputs`, and `inputs` and `state` in the number that
  callback takes. Anything else is refused with 400 problem+json naming what is wrong; Dash would
  have answered an HTML 500 (a KeyError or TypeError inside it). Any other error on that path is
  answered in JSON too, never as an HTML page.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import dash
import flask
from werkzeug.exceptions import HTTPException

log = logging.getLogger("signals.dashboard")

UPDATE_PATH = "/_dash-update-component"
FRAMING_HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'"}
_SHOWN = 80  # characters of a refused value quoted back


def install(app: dash.Dash) -> None:
    """Register the checks and headers on the app's Flask server."""
    server = app.server

    @server.before_request
    def check_update_request() -> flask.Response | None:
        if flask.request.path != UPDATE_PATH or flask.request.method != "POST":
            return None
        problem = malformed(app.callback_map, flask.request.get_data(cache=True))
        return _problem(400, "Malformed callback request", problem) if problem else None

    @server.after_request
    def refuse_framing(response: flask.Response) -> flask.Response:
        response.headers["X-Frame-Options"] = FRAMING_HEADERS["X-Frame-Options"]
        policy = response.headers.get("Content-Security-Policy")
        if not policy:
            response.headers["Content-Security-Policy"] = FRAMING_HEADERS["Content-Security-Policy"]
        elif "frame-ancestors" not in policy:
            response.headers["Content-Security-Policy"] = f"{policy}; frame-ancestors 'none'"
        return response

    @server.errorhandler(Exception)
    def json_errors(error: Exception) -> Any:
        on_update = flask.request.path == UPDATE_PATH
        if isinstance(error, HTTPException):
            if not on_update:
                return error  # Flask's own page (404 for an unknown asset, ...)
            return _problem(error.code or 500, error.name, error.description or error.name)
        log.exception("%s %s failed", flask.request.method, flask.request.path)
        if not on_update:
            return flask.Response("Internal server error", 500, mimetype="text/plain")
        return _problem(500, "Dashboard error", "The dashboard failed to answer this update; see its log.")


def malformed(callback_map: dict[str, Any], raw: bytes) -> str | None:
    """What is wrong with a callback request's body, in words; None when Dash can take it."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return "The body is not JSON."
    if not isinstance(body, dict):
        return "The body must be a JSON object."
    output = body.get("output")
    if not isinstance(output, str):
        return "'output' (the callback's output id, a string) is missing."
    callback = callback_map.get(output)
    if callback is None:
        return f"There is no callback for output {output[:_SHOWN]!r}."
    outputs = body.get("outputs")
    if not callback.get("no_output") and not _dependencies(outputs if isinstance(outputs, list) else [outputs]):
        return "'outputs' must be the callback's outputs, each an object with 'id' and 'property'."
    for field in ("inputs", "state"):
        given = body.get(field, [] if field == "state" else None)
        expected = len(callback.get(field) or [])
        if not isinstance(given, list) or not _dependencies(given):
            return f"'{field}' must be a list of objects with 'id' and 'property'."
        if len(given) != expected:
            return f"This callback takes {expected} {field}, not {len(given)}."
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "'changedPropIds' must be a list of strings."
    return None


def _dependencies(items: list[Any]) -> bool:
    """Each item an {'id', 'property'} object, or a list of them (a pattern-matching dependency)."""
    def one(item: Any) -> bool:
        return isinstance(item, dict) and isinstance(item.get("property"), str) and isinstance(item.get("id"), (str, dict))

    return all(one(i) or (isinstance(i, list) and all(one(j) for j in i)) for i in items)


def _problem(status: int, title: str, detail: str) -> flask.Response:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return flask.Response(json.dumps(body), status, mimetype="application/problem+json")
