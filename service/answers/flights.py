"""Each distinct answer computed once per deployment, however many ask and however long it takes.

A **flight** is the work of getting one answer (one cache key) into the cache. Per process, all
requests for a key join one flight; the flight is driven by a thread of this process's driver
pool, never by a request's own thread, so a request can stop waiting (its patience is over) while
the work goes on and lands in the cache for its retry.

Across processes and machines the flight's driver takes the key's **fill lock** in the gate
(Redis): the holder computes; every other driver only waits for the body. The holder keeps the
lock alive while it computes (a heartbeat renews a short lease, `lease_seconds`), so a holder
that dies (a killed worker) loses it within seconds and a waiting driver takes over; a holder
that lives is never doubled, however long it takes. The lock's note says when the holder expects
the answer (wall-clock seconds), so a request can decide at once whether to wait for it.

A holder computes only while it holds one of the machine's compute slots (compute_slots.py): the
queue in front of them is what makes an answer's expected time. A request whose answer is not
expected within its patience is answered at once (`Busy`: 503 with a `Retry-After` from the
queue); the flight goes on, so the retry finds the answer. A computation that fails (its work
limit, a refusal) stores its problem for a few seconds, so the requests waiting for it get the
same answer instead of each trying again.

**When the answer will be there** (the note, hence every waiter's `Retry-After`) is kept true
while the computation runs: the holder measures its work (deadline.metered: its share of the
process's CPU time, and how fast it is going now) and, at every heartbeat, turns what the last
computation of the endpoint used into the seconds left at the present pace. A computation slowed
by its neighbours says so, instead of a time that passes without the answer.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable

from cache import Gate
from service.answers import deadline
from service.answers.cache_entry import CacheEntry
from service.answers.compute_slots import ComputeSlots
from service.http.errors import Problem
from service.observability import metrics

log = logging.getLogger("signals.flights")

LEASE_SECONDS = 5.0        # a fill lock not renewed this long is free again (its holder died)
RENEW_SECONDS = 1.0        # how often a holder renews its locks
FAILURE_SECONDS = 10       # a failed computation's problem is the answer for this long
UNKNOWN_SECONDS = 1.0      # what the queue assumes of an endpoint never measured on this machine
MOST_FLIGHTS = 256         # flights one process drives at once; beyond, requests are answered Busy
_FAILED = "failed:"        # cache key prefix of a stored failure


class Busy(Exception):
    """The answer will not be ready within the request's patience: answer 503 with Retry-After."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(retry_after)
        self.retry_after = max(1, math.ceil(retry_after))


class _Held:
    """A fill lock this process holds: its token and note, and, once it computes, its work so far."""

    __slots__ = ("token", "note", "usage", "expected", "expected_cpu")

    def __init__(self, token: str, note: str, expected: float, expected_cpu: float | None) -> None:
        self.token, self.note = token, note
        self.usage: deadline.Usage | None = None  # set while the computation runs
        self.expected, self.expected_cpu = expected, expected_cpu

    def seconds_left(self) -> float:
        """Wall seconds until the running computation is expected to be done."""
        assert self.usage is not None
        left = self.usage.remaining_seconds(self.expected_cpu)
        if left is None:  # its work not measured yet: the expected wall time, half the time so far once past it
            elapsed = self.usage.elapsed
            left = self.expected - elapsed if elapsed < self.expected else max(0.5 * elapsed, 0.25 * self.expected)
        return left


class _Flight:
    __slots__ = ("key", "done", "entry", "error", "eta", "computed")

    def __init__(self, key: str, eta: float) -> None:
        self.key = key
        self.done = threading.Event()
        self.entry: CacheEntry | None = None
        self.error: BaseException | None = None
        self.eta = eta               # wall-clock time the answer is expected
        self.computed = False        # this process's driver ran the engine for it


class Flights:
    """The flights of one process. `background`: the precompute process (its computations leave
    one slot free for requests, and are counted with origin "precompute")."""

    def __init__(self, gate: Gate, slots: ComputeSlots, *,
                 lease_seconds: float = LEASE_SECONDS, renew_seconds: float = RENEW_SECONDS,
                 background: bool = False) -> None:
        self._gate = gate
        self._slots = slots
        self._lease = lease_seconds
        self._renew_every = renew_seconds
        self._background = background
        self._flights: dict[str, _Flight] = {}
        self._held: dict[str, _Held] = {}  # the fill locks this process holds, by key
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._heartbeat: threading.Thread | None = None

    # -- a request's side --------------------------------------------------------------------------

    def expected(self, endpoint: str) -> float | None:
        """How long a computation of the endpoint is expected to take (its last one on this machine;
        None when none was measured yet)."""
        return self._slots.expected(endpoint, None)

    def answer(self, key: str, compute: Callable[[], CacheEntry], *, endpoint: str, ttl: int,
               patience: float) -> tuple[CacheEntry, bool]:
        """The answer under `key`, computed once across the deployment; (entry, whether this
        process's driver computed it). Raises Busy when it will not be ready within `patience`
        seconds, and the computation's Problem when it failed."""
        flight = self.start(key, compute, endpoint=endpoint, ttl=ttl)
        wait = flight.eta - time.time()
        if not flight.done.is_set() and wait > patience:
            metrics.SHED.labels(endpoint).inc()
            raise Busy(wait)
        if not flight.done.wait(patience):
            metrics.SHED.labels(endpoint).inc()
            raise Busy(flight.eta - time.time())
        if flight.error is not None:
            raise _again(flight.error)
        assert flight.entry is not None
        return flight.entry, flight.computed

    def start(self, key: str, compute: Callable[[], CacheEntry], *, endpoint: str, ttl: int) -> _Flight:
        """The flight for `key`: joined if this process has one, else started (or, when the answer
        is stored already, a flight that has landed)."""
        with self._lock:
            flight = self._flights.get(key)
        if flight is not None:
            return flight
        landed = _Flight(key, time.time())
        try:
            landed.entry = self._stored(key)
        except Problem as problem:
            landed.error = problem
        if landed.entry is not None or landed.error is not None:
            landed.done.set()
            return landed
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight
            measured = self.expected(endpoint)
            # Never measured: not refused at once on a guess (the request waits its patience).
            eta = time.time() + self._slots.estimate() + (measured or 0.0)
            expected = measured if measured is not None else UNKNOWN_SECONDS
            if len(self._flights) >= MOST_FLIGHTS:
                raise Busy(eta - time.time())
            flight = self._flights[key] = _Flight(key, eta)
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(MOST_FLIGHTS, thread_name_prefix="flight")
                self._heartbeat = threading.Thread(target=self._renew_held, name="flight-heartbeat", daemon=True)
                self._heartbeat.start()
        self._pool.submit(self._drive, flight, compute, endpoint, ttl, expected)
        return flight

    # -- the driver ------------------------------------------------------------------------------

    def _drive(self, flight: _Flight, compute: Callable[[], CacheEntry], endpoint: str, ttl: int,
               expected: float) -> None:
        try:
            flight.entry = self._obtain(flight, compute, endpoint, ttl, expected)
        except BaseException as exc:  # noqa: BLE001 -- handed to every request of the flight
            flight.error = exc
            if not isinstance(exc, Problem):
                log.exception("computing %s failed", endpoint)
        finally:
            with self._lock:
                self._flights.pop(flight.key, None)
            flight.done.set()

    def _obtain(self, flight: _Flight, compute: Callable[[], CacheEntry], endpoint: str, ttl: int,
                expected: float) -> CacheEntry:
        key, pause = flight.key, 0.02
        while True:
            found = self._stored(key)
            if found is not None:
                return found
            note = _note(time.time() + self._slots.estimate() + expected)
            token = self._gate.try_lock(key, self._lease, note)
            if token is not None:
                return self._hold(flight, token, note, compute, endpoint, ttl, expected)
            held = self._gate.lock_note(key)
            if held:
                with contextlib.suppress(ValueError, IndexError):
                    flight.eta = float(held.split()[0])
            time.sleep(pause)
            pause = min(0.25, pause * 1.5)

    def _stored(self, key: str) -> CacheEntry | None:
        """The stored answer, or raise the stored failure; None when neither is there."""
        raw = self._gate.get(key)
        if raw is not None:
            return self._gate.decoded(key, raw, CacheEntry.decode)
        failed = self._gate.get(_FAILED + key)
        if failed is not None:
            raise _problem_from(failed)
        return None

    def _hold(self, flight: _Flight, token: str, note: str, compute: Callable[[], CacheEntry], endpoint: str,
              ttl: int, expected: float) -> CacheEntry:
        held = _Held(token, note, expected, self._slots.expected_cpu(endpoint))
        with self._lock:
            self._held[flight.key] = held
        try:
            found = self._stored(flight.key)  # stored and unlocked between our two calls?
            if found is not None:
                return found

            def queued(start_in: float) -> None:
                self._set_note(flight, time.time() + start_in + expected)

            with contextlib.ExitStack() as stack:
                with metrics.gauge_up(metrics.QUEUED):
                    stack.enter_context(self._slots.slot(expected, leave_free=1 if self._background else 0,
                                                         on_queued=queued, name=flight.key))
                self._set_note(flight, time.time() + expected)
                with metrics.gauge_up(metrics.RUNNING), deadline.metered() as usage:
                    held.usage = usage
                    try:
                        entry = compute()
                    except Problem as problem:
                        self._gate.put(_FAILED + flight.key, _problem_bytes(problem), FAILURE_SECONDS)
                        raise
                    seconds, cpu = usage.elapsed, usage.cpu
            self._slots.record(endpoint, seconds, cpu)
            metrics.COMPUTATIONS.labels(endpoint, "precompute" if self._background else "request").inc()
            metrics.COMPUTE_SECONDS.labels(endpoint).observe(seconds)
            flight.computed = True
            self._gate.put(flight.key, entry.encode(), ttl)
            return entry
        finally:
            with self._lock:
                self._held.pop(flight.key, None)
            self._gate.unlock(flight.key, token)

    def _set_note(self, flight: _Flight, eta: float) -> None:
        flight.eta = eta
        with self._lock:
            held = self._held.get(flight.key)
            if held is None:
                return
            held.note = _note(eta)
        self._gate.renew(flight.key, held.token, self._lease, held.note)

    def _renew_held(self) -> None:
        """Keep this process's locks alive while it computes (a dead process stops renewing), each
        note saying when its answer is now expected. Nothing may end this loop: a lock not renewed
        for a lease is taken over, and its answer computed twice."""
        beat = time.monotonic()
        while True:
            time.sleep(self._renew_every)
            late = time.monotonic() - beat - self._renew_every
            beat = time.monotonic()
            with self._lock:
                held = list(self._held.items())
            if held and late > self._lease / 2:  # only a late beat with locks to keep can lose one
                log.warning("the fill locks' heartbeat ran %.1f s late (their lease: %g s)", late, self._lease)
            for key, lock in held:
                try:
                    self._refresh_note(key, lock)
                    if not self._gate.renew(key, lock.token, self._lease, lock.note):
                        log.warning("the fill lock of a computation in progress was lost; it goes on")
                except Exception:  # noqa: BLE001 -- a failed renewal is retried at the next beat
                    log.exception("renewing a fill lock failed")

    def _refresh_note(self, key: str, lock: _Held) -> None:
        """The lock's note (and this process's flight) say when the answer is now expected."""
        left: float | None
        if lock.usage is not None:  # computing: when it will be done, at its present pace
            left = lock.seconds_left()
            self._slots.report(key, left)
        else:  # queued: when its turn comes (the computations ahead move on), and its own time
            start_in = self._slots.starts_in(key)
            left = None if start_in is None else start_in + lock.expected
        if left is None:
            return
        lock.note = _note(time.time() + left)
        with self._lock:
            flight = self._flights.get(key)
        if flight is not None:
            flight.eta = time.time() + left


def _note(eta: float) -> str:
    """The lock's note: when the answer is expected (wall-clock seconds) and who computes it."""
    return f"{eta:.3f} {os.getpid()}"


def _again(error: BaseException) -> BaseException:
    """The failure to raise in one more request: a Problem anew (each request its own exception,
    headers and all), anything else as it is."""
    if isinstance(error, Problem):
        # A Problem's description is its detail (never None); "" would be shown as its title.
        return Problem(int(error.status_code), error.description or "", errors=error.errors,
                       headers=dict(error.headers or {}) or None, title=error.title, kind=error.kind,
                       extensions=error.extensions)
    return error


def _problem_bytes(problem: Problem) -> bytes:
    return json.dumps({"status": int(problem.status_code), "detail": problem.description,
                       "headers": dict(problem.headers or {}), "kind": problem.kind}).encode()


def _problem_from(raw: bytes) -> Problem:
    stored = json.loads(raw)
    return Problem(stored["status"], stored["detail"], headers=stored["headers"] or None, kind=stored["kind"])
