"""One resource class serves every endpoint of the table in service/endpoints.py.

`prepare` validates the request and works out its cache key; the rate-limit middleware calls
it first so that one Redis round trip can both count the request and fetch its cached body.
A validation problem found by `prepare` is raised only after the rate limit, keeping the
documented order 401 -> 403 -> 429 -> 400. The responder then serves the cached body, or
computes, stores and serves it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import logging
from collections.abc import Callable
from email.utils import format_datetime
from typing import Any, NoReturn

import falcon

from cache import Gate
from paramcheck import FieldError, summary
from service import metrics
from service.cache_entry import (
    CacheEntry,
    DecodedEntries,
    cache_key,
    request_identity,
    seconds_until_next_hour,
)
from service.clock import Clock
from service.deadline import DeadlineExceeded, cores, metered, work_limit
from service.disclaimer import DISCLAIMER
from service.endpoints import Endpoint
from service.engine import cost as query_cost
from service.engine.interface import EventSource, QueryEngine, Snapshot
from service.engine.ordering import counting_rows
from service.engine.requests import FlexibleQuery, Request
from service.errors import ANSWER_NOT_READY, COMPUTATION_TIMEOUT, Problem
from service.etags import etag_for, if_none_match
from service.flights import Busy, Flights
from service.privacy.budget import PrivacyBudget, answer_name
from service.privacy.charges import charging
from service.paging import CURSOR, Cursor, CursorError, cursor_errors, page_headers, read_cursor
from service.params import ValidationFailed, parse_body, parse_query
from service.periods import AsOfError, as_of_range, parse_as_of, previous_as_of, previous_period_error
from service.render import csv_body, csv_filename, json_envelope
from service.resources.json_body import read_json_body
from service.resources.past import PAST_AS_OF_SECONDS, covered_start, first_event, past_data_version
from service.stale import StaleAnswer, StalePolicy
from service.windows import HOUR, compute_as_of, floor_hour, iso_z

log = logging.getLogger("signals.resources")

RETRY_AFTER_TIMEOUT = 60
SPEC_PREFIX = "asked:"           # cache key prefix of how to ask a request again (precompute)
SPEC_SECONDS = 7 * 24 * 3600    # Retry-After of a computation stopped at its deadline (seconds)
_CSV_TYPE = "text/csv; charset=utf-8; header=present"
_DISCLAIMER_HEADER = DISCLAIMER.encode("ascii", "replace").decode()


@dataclasses.dataclass(frozen=True)
class PreparedRequest:
    """A request made ready: either a problem to report, or what to answer, its cache key and
    the response headers that follow from it."""

    problem: Problem | None = None
    request: Request | None = None
    generation: int = 0   # of the snapshot the request was prepared for (it never holds the snapshot)
    as_of: dt.datetime | None = None    # the answer's as_of: the current one, or the requested earlier hour
    current: dt.datetime | None = None  # the current as_of the request was prepared under (what a memoised one is checked by)
    key: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    ttl: int | None = None  # seconds to keep the computed body; None: until the next hour
    # The request apart from its hour and data (None for an earlier as_of, or with caching off):
    # counted among the requests asked recently, and the name of its last answer (served stale).
    identity: str | None = None
    stale_ok: bool = False  # no as_of was asked for: the previous answer may be served stale meanwhile
    answer: str | None = None  # what the answer is for the privacy budget (budget.answer_name)


PREPARED_MEMO_SIZE = 1024          # distinct GET query strings remembered per endpoint and worker


class SignalsResource:
    """Serves one endpoint. `on_get` or `on_post` is bound according to the endpoint's method."""

    rate_limited = True

    def __init__(self, endpoint: Endpoint, engine: QueryEngine, store: EventSource, clock: Clock, gate: Gate,
                 flights: Flights, *, cache_responses: bool = True, cache_variant: str = "",
                 decoded: DecodedEntries | None = None, query_max_cells: int | None = None,
                 deadline_seconds: float | None = None, wait_seconds: float | None = None,
                 stale: StalePolicy | None = None, budget: PrivacyBudget | None = None) -> None:
        self.endpoint = endpoint
        self._budget = budget if budget is not None and budget.enabled else None
        # The bound on its cells, checked before computing (None: not checked).
        self._max_cells = query_max_cells if endpoint.cost_bounded else None
        self._deadline_seconds = deadline_seconds  # a computation running longer is stopped (503)
        # How long a request waits for its answer (queue and computation) before 503 + Retry-After.
        self._wait_seconds = wait_seconds if wait_seconds is not None else (deadline_seconds or 20.0)
        self._flights = flights
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
        # Decoded hot bodies, shared by the app's resources (bounded by size).
        self._decoded = decoded if decoded is not None else DecodedEntries()
        setattr(self, f"on_{endpoint.method.lower()}", self._respond)

    # -- before the rate limit ------------------------------------------------------------

    def prepare(self, req: falcon.Request) -> PreparedRequest:
        req.context.frames = frames = self._store.snapshot()
        req.context.now = now = self._clock.now()
        as_of = self._as_of(now, frames.last_event)
        if self._stale is not None:
            self._stale.seen(as_of, frames.generation)
        make = self._prepare_now if self.endpoint.in_body else self._memoised
        req.context.prepared = prepared = make(req, frames, as_of)
        return prepared

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
                req.context.body = body = read_json_body(req)
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
        prepared: PreparedRequest = getattr(req.context, "prepared", None) or self.prepare(req)
        if prepared.problem:
            raise prepared.problem
        if prepared.key is None:  # response caching is off: every request computed here
            self._check_cost(prepared, req.context.frames)
            self._send(req, resp, prepared, self._compute(prepared, req.context.frames), "miss")
            return
        admission = getattr(req.context, "admission", None)
        raw = admission.cached if admission is not None else self._gate.get(prepared.key)
        if raw is not None:
            self._send(req, resp, prepared, self._decoded.decode(prepared.key, raw), "hit")
            return
        # Only on a miss: an answer in the cache passed the same check for the same data.
        self._check_cost(prepared, req.context.frames)
        self._remember(req, prepared)
        stale = self._stale_answer(req, prepared)
        if stale is not None:
            self._start(prepared, req.context.frames)  # the current answer computes meanwhile
            self._send_stale(req, resp, prepared, stale)
            return
        try:
            entry, _computed = self._flights.answer(
                prepared.key, self._computer(prepared, req.context.frames), endpoint=self.endpoint.name,
                ttl=self._ttl(prepared), patience=self._wait_seconds)
        except Busy as busy:
            raise Problem(
                503,
                f"This answer is being computed and will not be ready within {self._wait_seconds:g} seconds "
                f"(other answers are computed first); its computation goes on, so retry after "
                f"{busy.retry_after} s.",
                headers={"Retry-After": str(busy.retry_after)}, kind=ANSWER_NOT_READY,
            ) from None
        self._send(req, resp, prepared, entry, "miss")

    def _remember(self, req: falcon.Request, prepared: PreparedRequest) -> None:
        """Keep how to ask this request again (once an hour, on its first miss): the precompute
        process asks the most asked ones again when the hour turns (service/precompute.py)."""
        offset: int = getattr(prepared.request, "offset", None) or 0
        if prepared.identity is None or offset:
            return  # a later page is asked after its first one, which is what gets asked again
        spec = {"endpoint": self.endpoint.name}
        if self.endpoint.in_body:
            spec["body"] = req.context.body
        else:
            spec["query"] = req.query_string
        with contextlib.suppress(Exception):  # a lost spec costs a precomputation, never the answer
            self._gate.put(SPEC_PREFIX + prepared.identity, json.dumps(spec, separators=(",", ":")).encode(),
                           SPEC_SECONDS)

    def _ttl(self, prepared: PreparedRequest) -> int:
        return prepared.ttl or seconds_until_next_hour(self._clock.now())

    def _computer(self, prepared: PreparedRequest, frames: Snapshot, shared: bool = False) -> Callable[[], CacheEntry]:
        """The computation of a flight: the answer, and (for the current hour) its copy kept to be
        served stale while the next hour's answer computes. `shared`: made ready for everyone by
        the precompute process, charged once to the shared privacy ledger when it has room."""
        def compute() -> CacheEntry:
            entry = self._compute(prepared, frames)
            if shared and self._budget is not None and prepared.answer is not None:
                entry = dataclasses.replace(entry, shared=self._budget.charge_shared(
                    prepared.answer, entry.charge, self._clock.now()))
            if self._stale is not None and prepared.identity is not None:
                assert prepared.as_of is not None  # prepared without a problem: it has an as_of
                self._stale.keep(self._gate, prepared.identity, entry, prepared.as_of, prepared.generation,
                                 self._ttl(prepared))
            return entry
        return compute

    def _start(self, prepared: PreparedRequest, frames: Snapshot) -> None:
        """Start (or join) the computation of the current answer without waiting for it."""
        assert prepared.key is not None
        with contextlib.suppress(Busy):
            self._flights.start(prepared.key, self._computer(prepared, frames), endpoint=self.endpoint.name,
                                ttl=self._ttl(prepared))

    def precompute(self, prepared: PreparedRequest, frames: Snapshot, patience: float) -> bool:
        """Make the answer of a prepared request ready in the cache (the precompute process);
        True when this call computed it, False when it was there or another computed it."""
        assert prepared.key is not None and prepared.problem is None
        if self._gate.get(prepared.key) is not None:
            return False
        self._check_cost(prepared, frames)
        _entry, computed = self._flights.answer(prepared.key, self._computer(prepared, frames, shared=True),
                                                endpoint=self.endpoint.name, ttl=self._ttl(prepared),
                                                patience=patience)
        return computed

    def _stale_answer(self, req: falcon.Request, prepared: PreparedRequest) -> StaleAnswer | None:
        if self._stale is None or prepared.identity is None or not prepared.stale_ok or prepared.as_of is None:
            return None
        return self._stale.find(self._gate, prepared.identity, prepared.as_of, prepared.generation,
                                req.get_header("Cache-Control"))

    def _check_cost(self, prepared: PreparedRequest, frames: Snapshot) -> None:
        """422 for a /query that could aggregate more cells than allowed, before any computing."""
        if self._max_cells is None:
            return
        request, as_of = prepared.request, prepared.as_of
        # Only /query is cost bounded (`Endpoint.cost_bounded`), and a prepared request has its as_of.
        assert isinstance(request, FlexibleQuery) and as_of is not None
        counts = self._engine.counts(frames)
        try:
            query_cost.check(counts, as_of, request, self._max_cells)
            if request.compare:  # the period before is computed too
                query_cost.check(counts, previous_as_of(request.window, as_of), request, self._max_cells)
        except query_cost.QueryTooLarge as exc:
            raise Problem(422, exc.detail(), extensions={
                "estimated_cells": exc.cost.cells,
                "max_cells": exc.max_cells,
                "narrowings": [{"change": dict(n.change), "estimated_cells": n.cells} for n in exc.narrowings],
            }) from None

    def _compute(self, prepared: PreparedRequest, frames: Snapshot) -> CacheEntry:
        with metered() as usage:  # the flight's own measure when a flight computes it
            try:
                with work_limit(self._deadline_seconds):
                    return self._computed(prepared, frames)
            except DeadlineExceeded:
                metrics.STOPPED.labels(self.endpoint.name).inc()
                log.warning("%s stopped after %.1f s (its work: %.1f CPU s; the limit: %g s x %d cores): %r",
                            self.endpoint.name, usage.elapsed, usage.cpu, self._deadline_seconds, cores(),
                            prepared.request)
        raise Problem(
            503,
            f"Computing this answer took more work than {self._deadline_seconds:g} seconds of this machine allow, "
            f"and was stopped. Retry later; for /query, a narrower query (a shorter window, a coarser bucket, "
            f"fewer group_by dimensions, filters) computes faster.",
            headers={"Retry-After": str(RETRY_AFTER_TIMEOUT)}, kind=COMPUTATION_TIMEOUT,
        )

    def _computed(self, prepared: PreparedRequest, frames: Snapshot) -> CacheEntry:
        request, as_of = prepared.request, prepared.as_of
        assert request is not None and as_of is not None  # prepared without a problem: it has both
        with counting_rows() as rows, charging() as charges:
            frame = getattr(self._engine, self.endpoint.name)(frames, as_of, request)
        # A ranked answer's rows before the page was cut from it; any other answer is whole.
        total = rows.total if rows.total is not None else frame.height
        if getattr(request, "format", "json") == "csv":
            body = csv_body(frame)
            return CacheEntry(etag_for(body), _CSV_TYPE, csv_filename(request.window, as_of), body, total,
                              charge=charges.micro)
        head = {name: _echo(getattr(request, name)) for name in self.endpoint.echo}
        if self.endpoint.extra:
            head.update(self.endpoint.extra(request, as_of))
        body = json_envelope(head, self.endpoint.records_field, frame)
        return CacheEntry(etag_for(body), falcon.MEDIA_JSON, None, body, total, charge=charges.micro)

    def _send(self, req: falcon.Request, resp: falcon.Response, prepared: PreparedRequest, entry: CacheEntry,
              outcome: str) -> None:
        fresh = seconds_until_next_hour(req.context.now)
        assert prepared.as_of is not None  # prepared without a problem
        self._charge(req, resp, prepared.answer, entry)
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
        if prepared.request is not None:
            self._charge(req, resp, answer_name(self.endpoint.name, prepared.request, stale.as_of,
                                                f"g{stale.generation}"), entry)
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

    def _charge(self, req: falcon.Request, resp: falcon.Response, answer: str | None, entry: CacheEntry) -> None:
        """Charge the subscription's privacy budget for the answer it is about to be shown
        (service/privacy/budget.py): 429 when it would pass the limit, else the budget's header."""
        principal = getattr(req.context, "principal", None)
        if self._budget is None or principal is None or answer is None:
            return
        if entry.shared:  # paid for everyone by the shared ledger
            state = self._budget.state(principal.subscription_id, req.context.now)
        else:
            admission = getattr(req.context, "admission", None)
            state = self._budget.charge(principal.subscription_id, answer, entry.charge, req.context.now,
                                        admission.ledger if admission is not None else None)
        if not state.allowed:
            metrics.PRIVACY_REFUSALS.labels(self.endpoint.name).inc()
            raise state.refusal()
        resp.set_header(*state.header())

    def _page_headers(self, req: falcon.Request, request: Request | None, as_of: dt.datetime,
                      entry: CacheEntry) -> list[tuple[str, str]]:
        """The row total and the next page's link (service/paging.py)."""
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


def _echo(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value

