"""The answer's path for one endpoint, from a prepared request to the entry served, in the order it
happens (the resource, service/http/resources/signals.py, parses before and writes the response after):

1. **Key.** The request was prepared (resources/signals.py `prepare`): its cache key names the
   endpoint, the canonical request, the hour and the data (cache_entry.py).
2. **Cache.** The rate limit's round trip fetched the cached body with the admission (or the gate
   is asked): a hit is served as it is.
3. **Cost.** Only on a miss: a /query that could aggregate too many cells is refused (422) before
   anything is computed.
4. **Stale.** In the minutes after the hour turns, the previous hour's answer may be served,
   labelled, while the current one computes (stale.py).
5. **Flight.** One computation per answer across workers and machines (flights.py); a request
   whose answer will not be ready in time is answered 503 (answer-not-ready) at once.
6. **Compute** under the work limit (deadline.py; 503 computation-timeout when stopped): the
   engine's answer, what its cells cost the people in them (privacy/charges.py), rendered as JSON
   or CSV with its ETag (render.py, etags.py), stored in the cache.
7. **Charge.** The subscription's privacy budget is charged for the answer it is about to be
   shown (privacy/budget.py; 429 privacy-budget when it would pass the limit).

Every 503 of computing an answer is decided here (and replayed by flights.py when a computation
failed for everyone waiting on it)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

import falcon

from cache import Admission, Gate
from service.answers.cache_entry import CacheEntry, seconds_until_next_hour
from service.answers.deadline import DeadlineExceeded, cores, metered, work_limit
from service.answers.etags import etag_for
from service.answers.flights import Busy, Flights
from service.answers.prepared import PreparedRequest
from service.answers.render import csv_body, csv_filename, json_envelope
from service.answers.stale import StaleAnswer, StalePolicy
from service.api.endpoints import Endpoint
from service.api.periods import previous_as_of
from service.clock import Clock
from service.engine import cost as query_cost
from service.engine.interface import QueryEngine, Snapshot
from service.engine.ordering import counting_rows
from service.engine.requests import FlexibleQuery
from service.http.errors import ANSWER_NOT_READY, COMPUTATION_TIMEOUT, OUTSIDE_RELEASE, Problem
from service.observability import metrics
from service.privacy.budget import BudgetState, PrivacyBudget, answer_name
from service.privacy.charges import charging
from service.release.answers import OutsideMenu

log = logging.getLogger("signals.resources")

RETRY_AFTER_TIMEOUT = 60         # Retry-After of a computation stopped at its work limit (seconds)
SPEC_PREFIX = "asked:"           # cache key prefix of how to ask a request again (precompute)
SPEC_SECONDS = 7 * 24 * 3600     # how long that is kept
CSV_TYPE = "text/csv; charset=utf-8; header=present"


@dataclasses.dataclass(frozen=True)
class Asker:
    """Who asks, as serving needs it: the request's moment, the subscription (None: nobody to
    charge, e.g. precompute), what the admission's round trip read, the Cache-Control header, and
    how to ask the request again (its query string or JSON body)."""

    now: dt.datetime
    subscription_id: int | None = None
    admission: Admission | None = None
    cache_control: str | None = None
    again: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Served:
    """What to send: the entry, how it was found ("hit", "miss" or "stale"), the stale answer it
    came from (its own as_of and generation), and the subscription's privacy budget after it."""

    entry: CacheEntry
    outcome: str
    stale: StaleAnswer | None = None
    budget: BudgetState | None = None


class Answers:
    """Serves one endpoint's answers (`serve`) and makes them ready ahead (`precompute`)."""

    def __init__(self, endpoint: Endpoint, engine: QueryEngine[Any], gate: Gate, flights: Flights, clock: Clock, *,
                 query_max_cells: int | None = None,
                 deadline_seconds: float | None = None, wait_seconds: float | None = None,
                 stale: StalePolicy | None = None, budget: PrivacyBudget | None = None) -> None:
        self.endpoint = endpoint
        self._engine = engine
        self._gate = gate
        self._flights = flights
        self._clock = clock
        # The bound on its cells, checked before computing (None: not checked).
        self._max_cells = query_max_cells if endpoint.cost_bounded else None
        self._deadline_seconds = deadline_seconds  # a computation running longer is stopped (503)
        # How long a request waits for its answer (queue and computation) before 503 + Retry-After.
        self._wait_seconds = wait_seconds if wait_seconds is not None else (deadline_seconds or 20.0)
        self._stale = stale
        self._budget = budget if budget is not None and budget.enabled else None

    @property
    def charges(self) -> bool:
        """Whether answers are charged to a privacy budget (the admission then reads the ledger)."""
        return self._budget is not None

    # -- the path -----------------------------------------------------------------------------

    def serve(self, prepared: PreparedRequest, frames: Snapshot, asker: Asker) -> Served:
        """The entry to send for a prepared request (without a problem), in the module's order."""
        if prepared.key is None:  # response caching is off: every request computed here
            self._check_cost(prepared, frames)
            return self._charged(prepared.answer, self._compute(prepared, frames), "miss", asker)
        raw = asker.admission.cached if asker.admission is not None else self._gate.get(prepared.key)
        if raw is not None:
            # The process's one body cache keeps the decoded entry beside the body (cache/bodies.py).
            entry = self._gate.decoded(prepared.key, raw, CacheEntry.decode)
            return self._charged(prepared.answer, entry, "hit", asker)
        # Only on a miss: an answer in the cache passed the same check for the same data.
        self._check_cost(prepared, frames)
        self._remember(prepared, asker.again)
        stale = self._stale_answer(prepared, asker.cache_control)
        if stale is not None:
            self._start(prepared, frames)  # the current answer computes meanwhile
            assert prepared.request is not None
            name = answer_name(self.endpoint.name, prepared.request, stale.as_of, f"g{stale.generation}")
            return dataclasses.replace(self._charged(name, stale.entry, "stale", asker), stale=stale)
        try:
            entry, _computed = self._flights.answer(
                prepared.key, self._computer(prepared, frames), endpoint=self.endpoint.name,
                ttl=self._ttl(prepared), patience=self._wait_seconds)
        except Busy as busy:
            raise Problem(
                503,
                f"This answer is being computed and will not be ready within {self._wait_seconds:g} seconds "
                f"(other answers are computed first); its computation goes on, so retry after "
                f"{busy.retry_after} s.",
                headers={"Retry-After": str(busy.retry_after)}, kind=ANSWER_NOT_READY,
            ) from None
        return self._charged(prepared.answer, entry, "miss", asker)

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

    # -- the steps ----------------------------------------------------------------------------

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

    def _remember(self, prepared: PreparedRequest, again: Mapping[str, Any]) -> None:
        """Keep how to ask this request again (once an hour, on its first miss): the precompute
        process asks the most asked ones again when the hour turns (service/answers/precompute.py)."""
        offset: int = getattr(prepared.request, "offset", None) or 0
        if prepared.identity is None or offset or not again:
            return  # a later page is asked after its first one, which is what gets asked again
        spec = {"endpoint": self.endpoint.name, **again}
        with contextlib.suppress(Exception):  # a lost spec costs a precomputation, never the answer
            self._gate.put(SPEC_PREFIX + prepared.identity, json.dumps(spec, separators=(",", ":")).encode(),
                           SPEC_SECONDS)

    def _stale_answer(self, prepared: PreparedRequest, cache_control: str | None) -> StaleAnswer | None:
        if self._stale is None or prepared.identity is None or not prepared.stale_ok or prepared.as_of is None:
            return None
        return self._stale.find(self._gate, prepared.identity, prepared.as_of, prepared.generation, cache_control)

    def _ttl(self, prepared: PreparedRequest) -> int:
        return prepared.ttl or seconds_until_next_hour(self._clock.now())

    def _start(self, prepared: PreparedRequest, frames: Snapshot) -> None:
        """Start (or join) the computation of the current answer without waiting for it."""
        assert prepared.key is not None
        with contextlib.suppress(Busy):
            self._flights.start(prepared.key, self._computer(prepared, frames), endpoint=self.endpoint.name,
                                ttl=self._ttl(prepared))

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
        """The engine's answer rendered, with what its cells cost (the privacy stage counts them)."""
        request, as_of = prepared.request, prepared.as_of
        assert request is not None and as_of is not None  # prepared without a problem: it has both
        try:
            with counting_rows() as rows, charging() as charges:
                frame = getattr(self._engine, self.endpoint.name)(frames, as_of, request)
        except OutsideMenu as exc:  # a /query no released table covers (service/release/answers.py)
            raise Problem(422, exc.detail, kind=OUTSIDE_RELEASE) from None
        # A ranked answer's rows before the page was cut from it; any other answer is whole.
        total = rows.total if rows.total is not None else frame.height
        if getattr(request, "format", "json") == "csv":
            body = csv_body(frame)
            return CacheEntry(etag_for(body), CSV_TYPE, csv_filename(request.window, as_of), body, total,
                              charge=charges.micro)
        head = {name: _echo(getattr(request, name)) for name in self.endpoint.echo}
        if self.endpoint.extra:
            head.update(self.endpoint.extra(request, as_of))
        body = json_envelope(head, self.endpoint.records_field, frame)
        return CacheEntry(etag_for(body), falcon.MEDIA_JSON, None, body, total, charge=charges.micro)

    def _charged(self, answer: str | None, entry: CacheEntry, outcome: str, asker: Asker) -> Served:
        """Charge the subscription's privacy budget for the answer it is about to be shown
        (service/privacy/budget.py): 429 when it would pass the limit."""
        if self._budget is None or asker.subscription_id is None or answer is None:
            return Served(entry, outcome)
        if entry.shared:  # paid for everyone by the shared ledger
            state = self._budget.state(asker.subscription_id, asker.now)
        else:
            state = self._budget.charge(asker.subscription_id, answer, entry.charge, asker.now,
                                        asker.admission.ledger if asker.admission is not None else None)
        if not state.allowed:
            metrics.PRIVACY_REFUSALS.labels(self.endpoint.name).inc()
            raise state.refusal()
        return Served(entry, outcome, budget=state)


def _echo(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
