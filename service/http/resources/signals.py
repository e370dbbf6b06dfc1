"""One resource class serves every endpoint of the table in service/api/endpoints.py: it parses, calls
and responds.

`prepare` validates the request and works out its cache key; the responder then passes the rate
limit (http/middleware/rate_limit.py `admit`) with that key, so that one Redis round trip can both
count the request and fetch its cached body. A validation problem found by `prepare` is raised
only after the rate limit, keeping the documented order 401 -> 403 -> 429 -> 400. The responder asks serving for the entry
(service/answers/serving.py: cache, stale, flight, compute, the privacy budget's charge) and
writes the response: headers, 304 or the body.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from email.utils import format_datetime
from typing import Any, NoReturn

import falcon

from cache import Gate
from paramcheck import FieldError, summary
from service.answers.cache_entry import (
    CacheEntry,
    cache_key,
    request_identity,
    seconds_until_next_hour,
)
from service.answers.etags import etag_for, if_none_match
from service.answers.flights import Flights
from service.answers.prepared import PreparedRequest
from service.answers.serving import Answers, Asker
from service.answers.stale import StaleAnswer, StalePolicy
from service.api.disclaimer import DISCLAIMER
from service.api.endpoints import Endpoint
from service.api.paging import CURSOR, Cursor, CursorError, cursor_errors, page_headers, read_cursor
from service.api.params import ValidationFailed, parse_body, parse_query
from service.api.periods import AsOfError, as_of_range, parse_as_of, previous_period_error
from service.api.windows import HOUR, compute_as_of, floor_hour, iso_z
from service.clock import Clock
from service.engine.interface import EventSource, QueryEngine, Snapshot
from service.engine.requests import Request
from service.http.errors import Problem
from service.http.middleware.rate_limit import admit
from service.http.resources.fixed import fix_body, fix_query
from service.http.resources.json_body import read_json_body
from service.http.resources.past import PAST_AS_OF_SECONDS, covered_start, first_event, past_data_version
from service.observability import metrics
from service.privacy.budget import PrivacyBudget, answer_name

log = logging.getLogger("signals.resources")

_DISCLAIMER_HEADER = DISCLAIMER.encode("ascii", "replace").decode()


PREPARED_MEMO_SIZE = 1024          # distinct GET query strings remembered per endpoint and worker


class SignalsResource:
    """Serves one endpoint. `on_get` or `on_post` is bound according to the endpoint's method."""

    rate_limited = True
    admits_itself = True  # the rate limit's round trip also fetches the answer (http/middleware/rate_limit.py)

    def __init__(self, endpoint: Endpoint, engine: QueryEngine, store: EventSource, clock: Clock, gate: Gate,
                 flights: Flights, *, cache_responses: bool = True, cache_variant: str = "",
                 query_max_cells: int | None = None,
                 deadline_seconds: float | None = None, wait_seconds: float | None = None,
                 stale: StalePolicy | None = None, budget: PrivacyBudget | None = None) -> None:
        self.endpoint = endpoint
        self.answers = Answers(endpoint, engine, gate, flights, clock, query_max_cells=query_max_cells,
                               deadline_seconds=deadline_seconds, wait_seconds=wait_seconds, stale=stale,
                               budget=budget)
        self._stale = stale
        self._cache_variant = cache_variant
        self._cache_responses = cache_responses
        self.min_tier = endpoint.min_tier
        self._engine = engine
        self._store = store
        self._clock = clock
        self._gate = gate
        # A prepared GET depends only on its query string, the hour and the data generation: the
        # prepared requests of recent query strings are kept, so a repeated request skips validation and
        # key derivation. Valid ones only, of the current hour and generation; the memo is
        # emptied when full. They hold no event frames: a memo that outlived an ingest must not
        # keep the previous generation's data in memory.
        self._prepared: dict[str, PreparedRequest] = {}
        self._prepared_for: tuple[dt.datetime, int] | None = None  # the (as_of, generation) of the memo
        self._as_of_memo: tuple | None = None  # (last event, hour start, hour end, as_of)
        self._first_memo: tuple[int, dt.datetime | None] | None = None  # (generation, first event)
        setattr(self, f"on_{endpoint.method.lower()}", self._respond)

    # -- before the rate limit ------------------------------------------------------------

    def prepare(self, req: falcon.Request) -> PreparedRequest:
        req.context.frames = frames = self._store.snapshot()
        req.context.now = now = self._clock.now()
        as_of = self._as_of(now, frames.last_event)
        if self._stale is not None:
            self._stale.seen(as_of, frames.generation)
        token = getattr(req.context, "token", None)  # a browser token's fixed parameters (resources/fixed.py)
        if token is not None and token.fixed and not self.endpoint.in_body:
            errors = fix_query(req, self.endpoint.params, token.fixed)
            if errors:
                return PreparedRequest(problem=Problem(400, summary(errors), errors=errors))
        make = self._prepare_now if self.endpoint.in_body else self._memoised
        return make(req, frames, as_of)

    def _as_of(self, now: dt.datetime, last_event: dt.datetime | None) -> dt.datetime:
        """`compute_as_of`, remembered for the rest of the hour while the data's last event stays."""
        known = self._as_of_memo
        if known is not None and known[0] == last_event and known[1] <= now < known[2]:
            return known[3]
        as_of = compute_as_of(now, last_event)
        hour = floor_hour(now)
        self._as_of_memo = (last_event, hour, hour + HOUR, as_of)
        return as_of

    def _memoised(self, req: falcon.Request, frames: Snapshot, as_of: dt.datetime) -> PreparedRequest:
        if self._prepared_for != (as_of, frames.generation):
            self._prepared = {}
            self._prepared_for = (as_of, frames.generation)
        memo = self._prepared
        prepared = memo.get(req.query_string)
        # A thread that raced past a change of hour or generation may find or leave a prepared request of
        # the other one: it is only used when it matches.
        if prepared is not None and prepared.current == as_of and prepared.generation == frames.generation:
            return prepared
        prepared = self._prepare_now(req, frames, as_of)
        if prepared.problem is None:
            if len(memo) >= PREPARED_MEMO_SIZE:
                memo.clear()
            memo[req.query_string] = prepared
        return prepared

    def _prepare_now(self, req: falcon.Request, frames: Snapshot, as_of: dt.datetime) -> PreparedRequest:
        try:
            values = self._validated(req)
            current = as_of
            asked_as_of = values.pop("as_of", None)
            cursor = self._cursor(req)
            if cursor is not None:  # a later page of POST /query: the first page's as_of
                pinned = self._requested_as_of(cursor.as_of, values["window"], current, frames)
                if asked_as_of is not None and self._requested_as_of(
                        asked_as_of, values["window"], current, frames) != pinned:
                    self._refuse(FieldError(CURSOR, "was issued for another as_of: post the same body as for "
                                                    "the previous page"))
                asked_as_of = cursor.as_of
            as_of = self._requested_as_of(asked_as_of, values["window"], current, frames)
            if values.get("compare"):
                self._check_previous_period(values["window"], as_of, frames)
            request = self.endpoint.build(values)
            if cursor is not None:
                errors = cursor_errors(cursor, request)
                if errors:
                    self._refuse(*errors)
                request = dataclasses.replace(request, offset=cursor.offset)
        except Problem as problem:
            return PreparedRequest(problem=problem)
        key, ttl, identity = None, None, None
        # A past window changes only when data for its dates do: its data version names it.
        covered = None if as_of == current else past_data_version(frames, covered_start(request, as_of), as_of)
        if self._cache_responses:
            if covered is None:  # the same entry as without as_of: the same body
                key = cache_key(self.endpoint.name, request, as_of, frames.generation, self._cache_variant)
                identity = request_identity(self.endpoint.name, request, self._cache_variant)
            else:
                key = cache_key(self.endpoint.name, request, as_of, frames.generation, self._cache_variant,
                                data_version=covered)
                ttl = PAST_AS_OF_SECONDS
        answer = answer_name(self.endpoint.name, request, as_of,
                             f"g{frames.generation}" if covered is None else f"d{covered}")
        headers = (
            ("Last-Modified", format_datetime(as_of, usegmt=True)),
            ("X-Signals-As-Of", iso_z(as_of)),
            ("X-Signals-Data-Generation", str(frames.generation)),
        )
        return PreparedRequest(request=request, generation=frames.generation, as_of=as_of, current=current, key=key,
                               headers=headers, ttl=ttl, identity=identity, stale_ok=asked_as_of is None,
                               answer=answer)

    @staticmethod
    def _cursor(req: falcon.Request) -> Cursor | None:
        """POST /query's `cursor` query parameter (a later page), read; None without one."""
        text = req.params.get(CURSOR)
        if text is None:
            return None
        if not isinstance(text, str):
            SignalsResource._refuse(FieldError(CURSOR, "is given more than once; send the one of the Link header"))
        try:
            return read_cursor(text)
        except CursorError as exc:
            SignalsResource._refuse(FieldError(CURSOR, str(exc)))

    @staticmethod
    def _refuse(*errors: FieldError) -> NoReturn:
        raise Problem(400, summary(list(errors)), errors=list(errors))

    def _requested_as_of(self, text: str | None, window: str, current: dt.datetime,
                         frames: Snapshot) -> dt.datetime:
        """The as_of the answer is for: the current one, or the requested earlier hour (400 naming
        `as_of`, with the accepted range, when it is not accepted)."""
        if text is None:
            return current
        try:
            return parse_as_of(text, as_of_range(window, current, self._first_event(frames)))
        except AsOfError as exc:
            error = FieldError("as_of", str(exc))
            raise Problem(400, summary([error]), errors=[error]) from None

    def _check_previous_period(self, window: str, as_of: dt.datetime, frames: Snapshot) -> None:
        reason = previous_period_error(window, as_of, self._first_event(frames))
        if reason is not None:
            error = FieldError("compare", reason)
            raise Problem(400, summary([error]), errors=[error])

    def _first_event(self, frames: Snapshot) -> dt.datetime | None:
        """The data's first event (over both tables), remembered for the snapshot's generation."""
        known = self._first_memo
        if known is not None and known[0] == frames.generation:
            return known[1]
        first = first_event(frames)
        self._first_memo = (frames.generation, first)
        return first

    def _validated(self, req: falcon.Request) -> dict[str, Any]:
        endpoint = self.endpoint
        try:
            if endpoint.in_body:
                if set(req.params) - {CURSOR}:  # the cursor of a later page is the one query parameter
                    raise ValidationFailed([
                        FieldError(name, "query parameters are not accepted here; send every field in the JSON body")
                        for name in sorted(req.params) if name != CURSOR
                    ])
                body = read_json_body(req)
                token = getattr(req.context, "token", None)
                if token is not None and token.fixed:
                    body, errors = fix_body(body, endpoint.params, token.fixed)
                    if errors:
                        raise ValidationFailed(errors)
                req.context.body = body
                values = parse_body(endpoint.params, body)
            else:
                values = parse_query(endpoint.params, req.params)
            errors = endpoint.check(values) if endpoint.check else []
            if errors:
                raise ValidationFailed(errors)
        except ValidationFailed as exc:
            raise Problem(400, summary(exc.errors), errors=exc.errors) from None
        return values

    # -- the responder ----------------------------------------------------------------------

    def _respond(self, req: falcon.Request, resp: falcon.Response) -> None:
        prepared = self.prepare(req)
        principal = getattr(req.context, "principal", None)
        if principal is not None:  # the order: 401 -> 403 (middleware) -> 429 -> 400
            admit(req, resp, self._gate, principal, prepared.key, prepared.identity,
                  prepared.answer if self.answers.charges else None)
        if prepared.problem:
            raise prepared.problem
        again = {"body": req.context.body} if self.endpoint.in_body else {"query": req.query_string}
        served = self.answers.serve(prepared, req.context.frames, Asker(
            req.context.now, principal.subscription_id if principal is not None else None,
            getattr(req.context, "admission", None), req.get_header("Cache-Control"), again))
        if served.budget is not None:
            resp.set_header(*served.budget.header())
        if served.stale is not None:
            self._send_stale(req, resp, prepared, served.stale)
        else:
            self._send(req, resp, prepared, served.entry, served.outcome)

    def precompute(self, prepared: PreparedRequest, frames: Snapshot, patience: float) -> bool:
        """Make the answer of a prepared request ready in the cache (the precompute process)."""
        return self.answers.precompute(prepared, frames, patience)

    def _send(self, req: falcon.Request, resp: falcon.Response, prepared: PreparedRequest, entry: CacheEntry,
              outcome: str) -> None:
        fresh = seconds_until_next_hour(req.context.now)
        assert prepared.as_of is not None  # prepared without a problem
        resp.set_headers((
            ("X-Cache", outcome),
            # RFC 9211: how the cache answered ("fwd=miss": computed, or waited for its computation)
            ("Cache-Status", f"signals; hit; ttl={fresh}" if outcome == "hit" else "signals; fwd=miss; stored"),
            ("ETag", entry.etag),
            ("Cache-Control", f"private, max-age={fresh}"),
            *prepared.headers,
            *self._page_headers(req, prepared.request, prepared.as_of, entry),
        ))
        metrics.CACHE_ANSWERS.labels(self.endpoint.name, outcome).inc()
        self._body(req, resp, entry)

    def _send_stale(self, req: falcon.Request, resp: falcon.Response, prepared: PreparedRequest,
                    stale: StaleAnswer) -> None:
        """The previous answer, labelled as what it is: its own as_of and generation, its age, and
        a Cache-Status saying it is served stale while the current one is computed (RFC 5861)."""
        entry = stale.entry
        if entry.content_type == falcon.MEDIA_JSON and entry.body.startswith(b"{"):
            # The body says which hour it is for (a member the current answer leaves out: its
            # as_of is the current one); a CSV says it in its headers and file name.
            body = b'{"as_of":"' + iso_z(stale.as_of).encode() + b'",' + entry.body[1:]
            entry = CacheEntry(etag_for(body), entry.content_type, entry.filename, body, entry.rows)
        resp.set_headers((
            ("X-Cache", "stale"),
            ("Cache-Status", f"signals; hit; ttl={-stale.stale_for}; detail=stale-while-revalidate"),
            ("Age", str(stale.age)),
            ("ETag", entry.etag),
            ("Cache-Control", "private, max-age=0"),
            ("Last-Modified", format_datetime(stale.as_of, usegmt=True)),
            ("X-Signals-As-Of", iso_z(stale.as_of)),
            ("X-Signals-Data-Generation", str(stale.generation)),
            *self._page_headers(req, prepared.request, stale.as_of, entry),
        ))
        metrics.CACHE_ANSWERS.labels(self.endpoint.name, "stale").inc()
        self._body(req, resp, entry)

    def _page_headers(self, req: falcon.Request, request: Request | None, as_of: dt.datetime,
                      entry: CacheEntry) -> list[tuple[str, str]]:
        """The row total and the next page's link (service/api/paging.py)."""
        return page_headers(self.endpoint.full_path, req.query_string, request, as_of, entry.rows,
                            self.endpoint.in_body)

    def _body(self, req: falcon.Request, resp: falcon.Response, entry: CacheEntry) -> None:
        resp.append_header("Vary", "Authorization")  # appended: never drops a Vary set before
        if if_none_match(req.get_header("If-None-Match"), entry.etag):
            resp.status = falcon.HTTP_304
            return
        resp.content_type = entry.content_type
        if entry.filename:
            resp.downloadable_as = entry.filename
            resp.set_header("X-Signals-Disclaimer", _DISCLAIMER_HEADER)
        resp.data = entry.body

