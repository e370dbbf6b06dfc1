"""Ready before it is asked: when the hour turns or new data lands, the answers asked recently are
computed for the new `as_of` before their askers come back.

What: the `SIGNALS_PRECOMPUTE_TOP` requests asked most in recent hours, by how many subscriptions
asked them, not how often. A request counts once in a sorted set in Redis the first time a
subscription asks it in a UTC day, and only when accepted (the same round trip as its rate limit,
cache/admit.lua, which keeps each subscription's day's set of what it asked): a subscription
repeating a request (repeats are free for it) adds nothing to its count, so repeats cannot push
the request among these, whose answers the shared privacy ledger pays for
(service/privacy/budget.py). Each hour the counts are halved (recent asks weigh more) and only the
most asked are kept. A request's first miss of an hour keeps how to ask it again (its query
string, or its JSON body) for a week.

In what order: most asked first. How: each is asked through the web process's own resources
(validation, cost check, cache key), so the answer is byte for byte the one a request would get,
stored under the same key; a request asked meanwhile joins the computation instead of starting
its own (service/answers/flights.py), and gets the previous hour's answer, labelled stale, if it may
(service/answers/stale.py). CPU: one computation at a time, at a lower scheduling priority (nice 10), and
only while another compute slot stays free for requests (compute_slots.py).

With Redis absent (the embedded default) the counts are this process's own, and it never sees a
request: it then precomputes nothing, which is the right answer for a single web process.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

import falcon.testing

from cache import Gate
from service.answers.flights import Busy
from service.answers.serving import SPEC_PREFIX
from service.api.windows import compute_as_of, floor_hour
from service.clock import Clock
from service.engine.interface import EventSource
from service.http.errors import Problem
from service.http.resources.signals import SignalsResource
from service.observability import metrics

log = logging.getLogger("signals.precompute")

FADE = 0.5              # each round, older asks count half as much
KEEP_FACTOR = 5         # the sorted set keeps this many times SIGNALS_PRECOMPUTE_TOP requests
PATIENCE_SECONDS = 600  # how long the process waits for one answer (it has nobody waiting on it)


@dataclasses.dataclass
class RoundReport:
    as_of: dt.datetime
    generation: int
    asked: int = 0        # requests considered
    computed: int = 0     # computed by this round
    cached: int = 0       # already there (a request or another machine was first)
    failed: int = 0       # refused (the request is no longer valid) or failed to compute
    seconds: float = 0.0
    lag_seconds: float = 0.0  # from the hour turn (or the landing seen) to the round's end


class Precompute:
    def __init__(self, store: EventSource[Any], resources: Iterable[SignalsResource], gate: Gate, clock: Clock, *, top: int) -> None:
        self._store = store
        self._resources = {resource.endpoint.name: resource for resource in resources}
        self._gate = gate
        self._clock = clock
        self._top = top
        self._done: tuple[dt.datetime, int] | None = None

    def due(self) -> tuple[dt.datetime, int] | None:
        """The (as_of, generation) to precompute for, when it is not the last one done."""
        frames = self._store.snapshot()
        state = (compute_as_of(self._clock.now(), frames.last_event), frames.generation)
        return None if state == self._done else state

    def run(self, stop: threading.Event, interval: float = 1.0) -> None:
        while not stop.is_set():
            state = self.due()
            if state is not None:
                report = self.run_round(state)
                log.info("precomputed for %s (generation %d): %d computed, %d cached, %d failed of %d asked in "
                         "%.1f s (%.1f s after they became due)", report.as_of.isoformat(), report.generation,
                         report.computed, report.cached, report.failed, report.asked, report.seconds,
                         report.lag_seconds)
            stop.wait(interval)

    def run_round(self, state: tuple[dt.datetime, int] | None = None) -> RoundReport:
        state = state or self.due() or self._done
        assert state is not None
        as_of, generation = state
        now = self._clock.now()
        # The moment the answers became due: the hour's start when the hour turned while this
        # process watched; else now (a landing, or the process's first round).
        turned = floor_hour(now) if self._done is not None and self._done[0] != as_of else now
        started = time.monotonic()
        report = RoundReport(as_of, generation)
        for identity, _count in self._gate.most_asked(self._top):
            report.asked += 1
            outcome = self._one(identity)
            setattr(report, outcome, getattr(report, outcome) + 1)
            metrics.PRECOMPUTED.labels(outcome).inc()
        self._gate.fade_asked(FADE, self._top * KEEP_FACTOR)
        self._done = state
        report.seconds = time.monotonic() - started
        # From the turn to the round's start by the service's clock, then the round's own duration.
        report.lag_seconds = max(0.0, (now - turned).total_seconds()) + report.seconds
        metrics.PRECOMPUTE_LAG.set(report.lag_seconds)
        return report

    def _one(self, identity: str) -> str:
        raw = self._gate.get(SPEC_PREFIX + identity)
        if raw is None:
            return "failed"
        try:
            spec = json.loads(raw)
            resource = self._resources[spec["endpoint"]]
        except (ValueError, KeyError):
            return "failed"
        req = _request(resource, spec)
        try:
            prepared = resource.prepare(req)
            if prepared.problem is not None or prepared.key is None:
                return "failed"
            return "computed" if resource.precompute(prepared, req.context.frames, PATIENCE_SECONDS) else "cached"
        except (Problem, Busy):
            return "failed"
        except Exception:  # noqa: BLE001 -- one request's failure must not stop the round
            log.exception("precomputing %s failed", spec.get("endpoint"))
            return "failed"


def _request(resource: SignalsResource, spec: dict[str, Any]) -> falcon.Request:
    """The request as the web process would receive it."""
    endpoint = resource.endpoint
    if "body" in spec:
        return falcon.testing.create_req(method=endpoint.method, path=endpoint.full_path,
                                         body=json.dumps(spec["body"]), headers={"Content-Type": "application/json"})
    return falcon.testing.create_req(method=endpoint.method, path=endpoint.full_path, query_string=spec.get("query", ""))
