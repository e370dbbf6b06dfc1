"""One resource class serves every endpoint of the table in service/endpoints.py:
validate (400) -> engine request -> answer (compute, render)."""

from __future__ import annotations

import json
import logging
from email.utils import format_datetime
from typing import Any

import falcon

from service.endpoints import Endpoint
from service.engine import Engine
from service.errors import Problem
from service.params import FieldError, ValidationFailed, parse_body, parse_query
from service.render import csv_body, csv_filename, json_body
from service.clock import Clock
from service.store.reader import EventStore
from service.windows import compute_as_of, iso_z

log = logging.getLogger("signals.resources")

MAX_BODY_BYTES = 64 * 1024


class SignalsResource:
    """Serves one endpoint. `on_get` or `on_post` is bound according to the endpoint's method."""

    def __init__(self, endpoint: Endpoint, engine: Engine, store: EventStore, clock: Clock) -> None:
        self.endpoint = endpoint
        self.min_tier = endpoint.min_tier
        self._engine = engine
        self._store = store
        self._clock = clock
        setattr(self, f"on_{endpoint.method.lower()}", self._respond)

    def _respond(self, req: falcon.Request, resp: falcon.Response) -> None:
        values = self._validated(req)
        request = self.endpoint.build(values)
        self.answer(request, resp)

    def _validated(self, req: falcon.Request) -> dict[str, Any]:
        endpoint = self.endpoint
        try:
            if endpoint.in_body:
                if req.params:
                    raise ValidationFailed([
                        FieldError(name, "query parameters are not accepted here; send every field in the JSON body")
                        for name in sorted(req.params)
                    ])
                values = parse_body(endpoint.params, read_json_body(req))
            else:
                values = parse_query(endpoint.params, req.params)
            errors = endpoint.check(values) if endpoint.check else []
            if errors:
                raise ValidationFailed(errors)
        except ValidationFailed as exc:
            raise Problem(400, _summary(exc.errors), errors=exc.errors) from None
        return values

    def answer(self, request: Any, resp: falcon.Response) -> None:
        """Compute and render the answer to a validated request."""
        frames = self._store.snapshot()
        as_of = compute_as_of(self._clock.now(), frames.last_event)
        frame = getattr(self._engine, self.endpoint.name)(frames, as_of, request)
        resp.set_header("Last-Modified", format_datetime(as_of, usegmt=True))
        resp.set_header("X-Signals-As-Of", iso_z(as_of))
        resp.set_header("X-Signals-Data-Generation", str(frames.generation))
        if getattr(request, "format", "json") == "csv":
            resp.content_type = "text/csv; charset=utf-8; header=present"
            resp.downloadable_as = csv_filename(request.window, as_of)
            resp.set_header("X-Signals-Disclaimer", _header_safe_disclaimer())
            resp.data = csv_body(frame)
            return
        head = {name: _echo(getattr(request, name)) for name in self.endpoint.echo}
        if self.endpoint.extra:
            head.update(self.endpoint.extra(request, as_of))
        resp.content_type = falcon.MEDIA_JSON
        resp.data = json_body(head, self.endpoint.records_field, frame)


def _echo(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _header_safe_disclaimer() -> str:
    from service.disclaimer import DISCLAIMER

    return DISCLAIMER.encode("ascii", "replace").decode()


def _summary(errors: list[FieldError]) -> str:
    if len(errors) == 1:
        return f"Parameter '{errors[0].name}' {errors[0].reason}."
    return f"{len(errors)} parameters are invalid: " + ", ".join(f"'{e.name}'" for e in errors) + ". See errors."


def read_json_body(req: falcon.Request) -> Any:
    """The request body as JSON: 415 unless JSON, 413 over 64 KiB, 400 when malformed or empty."""
    media = (req.content_type or "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        raise Problem(415, "Send the request body as JSON with 'Content-Type: application/json'.")
    if req.content_length is not None and req.content_length > MAX_BODY_BYTES:
        raise Problem(413, f"The request body is {req.content_length} bytes; at most {MAX_BODY_BYTES} are accepted.")
    raw = req.bounded_stream.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise Problem(413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
    if not raw.strip():
        raise Problem(400, "The request body is empty; send a JSON object, e.g. {\"window\": \"24h\"}.",
                      errors=[FieldError("body", "is empty")])
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise Problem(400, "The request body is not valid UTF-8.", errors=[FieldError("body", "is not valid UTF-8")]) from None
    except json.JSONDecodeError as exc:
        reason = f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        raise Problem(400, f"The request body {reason}.", errors=[FieldError("body", reason)]) from None
