"""A bound on the work of computing one answer, so that no computation runs unbounded in a worker.

The cost check in front of /query (engine/cost.py) refuses whatever could run that long; this is
the backstop for what still overruns (a store much larger than the bound was measured on): the
resource answers 503 problem+json instead.

**What is bounded is the work, not the wall clock.** A computation that shares the machine's cores
with others (the hour turn, when every answer is asked at once) takes longer on the clock without
doing more work; stopping it would throw away what every request waiting for it needs, and their
retries would compute it again. So `work_limit(seconds)` stops a computation once it has used the
CPU time that `seconds` of the whole machine give (`seconds` x the cores this process may use), or,
as a backstop for work that uses no CPU of this process (a remote database, a wedged call), once it
has run `WALL_FACTOR` x `seconds` on the clock. A computation that alone would take longer than
`seconds` is still stopped: it uses that CPU time whoever else runs.

**How the CPU time of one computation is known.** polars (and embedded ClickHouse) compute in
native thread pools shared by the whole process, so no thread's clock holds a computation's work.
A meter thread reads the process's CPU time (`time.process_time`, every thread) every `TICK_SECONDS`
and shares what was used since the last tick equally among the computations the process is running
then (at most the machine's compute slots: compute_slots.py). Each computation's `Usage` keeps what
it was given and how fast it is going, which is also what says when it will be done
(`Usage.remaining_seconds`: the flights' Retry-After).

**How it is stopped.** At the limit the meter raises `DeadlineExceeded` asynchronously in the
thread running the computation (CPython's PyThreadState_SetAsyncExc), which unwinds it: its frames
and intermediates are released at once. Python delivers the exception between bytecodes, so a
polars call in progress (Rust, GIL released) finishes first and the exception comes as soon as it
returns; the privacy stage's per-cell Python work is interrupted where it stands. Why not a timed
wait on the computation: polars cannot be cancelled, so an abandoned computation would keep its
CPU and memory until it finished by itself. Why a BaseException: the computation's own `except
Exception` blocks must not swallow it (like KeyboardInterrupt). Only the code inside the `with`
block is interrupted: leaving the block withdraws an exception that fired but was not yet raised.

A call into native code that does not return to Python (a query in embedded ClickHouse, chdb) is
not interrupted by the exception: such callers ask `remaining()` (the wall-clock backstop's time
left) and hand it to the database (ClickHouse's max_execution_time, service/clickhouse/connection.py).

`metered()` only measures (the flights measure every computation, to say when it will be done);
`work_limit()` measures and bounds. Nested, they share one `Usage` per thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
from collections.abc import Iterator

TICK_SECONDS = 0.1   # how often the meter shares out the process's CPU time and checks the limits
# The wall-clock backstop: this many times the limit's seconds. Computations share the machine's
# compute slots (one per core), so a computation slowed by its neighbours takes a few times its
# time alone; five is well above that, and still bounds work that uses no CPU of this process.
WALL_FACTOR = 5.0
_RATE_WEIGHT = 0.3   # the weight of the latest tick in a computation's smoothed CPU rate

# int PyThreadState_SetAsyncExc(unsigned long id, PyObject *exc): exc NULL withdraws a pending one.
_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))


class DeadlineExceeded(BaseException):  # like KeyboardInterrupt: not an Exception, on purpose
    """The computation used more than its limit."""


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class Usage:
    """What one computation (one thread's `metered` block) has used so far, and its limit."""

    __slots__ = ("thread_id", "started", "cpu", "rate", "cpu_limit", "wall_limit", "fired", "_armed", "_lock")

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id
        self.started = time.monotonic()
        self.cpu = 0.0                 # CPU seconds attributed to it
        self.rate = 0.0                # its recent CPU seconds per second (smoothed)
        self.cpu_limit: float | None = None
        self.wall_limit: float | None = None  # seconds after `started`
        self.fired = False
        self._armed = False
        self._lock = threading.Lock()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining_seconds(self, expected_cpu: float | None) -> float | None:
        """Wall seconds until a computation expected to use `expected_cpu` CPU seconds is done, at
        the pace it is going now (None when nothing is known yet). One past its expected work is
        assumed to need half of what it has done again (at least a quarter of what was expected):
        the longer it has overrun, the further off its end."""
        if not expected_cpu or self.rate <= 0:
            return None
        if self.cpu < expected_cpu:
            left = max(expected_cpu - self.cpu, 0.25 * expected_cpu)
        else:
            left = max(0.5 * self.cpu, 0.25 * expected_cpu)
        return left / self.rate

    def _arm(self, cpu_limit: float | None, wall_limit: float | None) -> None:
        with self._lock:
            self.cpu_limit, self.wall_limit = cpu_limit, wall_limit
            self._armed, self.fired = cpu_limit is not None or wall_limit is not None, False

    def _disarm(self) -> None:
        with self._lock:
            self._armed = False
            if self.fired:  # fired but perhaps not yet raised: the block finished first
                _clear_async_exc(self.thread_id, None)
            self.cpu_limit = self.wall_limit = None

    def _check(self) -> None:
        over_cpu = self.cpu_limit is not None and self.cpu > self.cpu_limit
        over_wall = self.wall_limit is not None and self.elapsed > self.wall_limit
        if not (over_cpu or over_wall):
            return
        with self._lock:
            if self._armed:
                self._armed, self.fired = False, True
                _set_async_exc(self.thread_id, DeadlineExceeded)


class _Meter:
    """The process's one meter: shares the process's CPU time among its running computations."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usages: dict[int, Usage] = {}
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._pid = 0

    def start(self) -> Usage:
        ident = threading.get_ident()
        with self._lock:
            if self._thread is None or self._pid != os.getpid():  # first use, or a forked child
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="work-meter", daemon=True)
                self._thread.start()
            usage = self._usages[ident] = Usage(ident)
            self._wake.notify()
        return usage

    def stop(self, usage: Usage) -> None:
        with self._lock:
            if self._usages.get(usage.thread_id) is usage:
                del self._usages[usage.thread_id]

    def current(self) -> Usage | None:
        return self._usages.get(threading.get_ident())

    def armed(self) -> None:
        """A limit was set: look again at once (a small limit is checked more often than every tick)."""
        with self._lock:
            self._wake.notify()

    def _interval(self) -> float:
        """Until the next look: a tick, or a quarter of the smallest limit in force, at least 1 ms."""
        limits = [limit for usage in self._usages.values()
                  for limit in (usage.wall_limit and usage.wall_limit / WALL_FACTOR, usage.cpu_limit) if limit]
        return max(0.001, min([TICK_SECONDS, *(limit / 4 for limit in limits)]))

    def _run(self) -> None:
        last_cpu, last = time.process_time(), time.monotonic()
        while True:
            with self._lock:
                while not self._usages:
                    self._wake.wait()
                    last_cpu, last = time.process_time(), time.monotonic()
                self._wake.wait(self._interval())
            cpu, now = time.process_time(), time.monotonic()
            used, seconds = max(cpu - last_cpu, 0.0), max(now - last, 1e-6)
            last_cpu, last = cpu, now
            with self._lock:
                usages = list(self._usages.values())
            if not usages:
                continue
            share = used / len(usages)
            for usage in usages:
                usage.cpu += share
                usage.rate += _RATE_WEIGHT * (share / seconds - usage.rate)
                usage._check()


_meter = _Meter()


@contextlib.contextmanager
def metered() -> Iterator[Usage]:
    """Measure the block's work (its share of the process's CPU time); yields its `Usage`. Inside
    another `metered` block of the same thread, the outer one's Usage."""
    usage = _meter.current()
    if usage is not None:
        yield usage
        return
    usage = _meter.start()
    try:
        yield usage
    finally:
        _meter.stop(usage)


@contextlib.contextmanager
def work_limit(seconds: float | None) -> Iterator[None]:
    """Raise DeadlineExceeded inside the block once it has used the CPU time of `seconds` on every
    core, or has run WALL_FACTOR x `seconds` on the clock (None or 0: no limit)."""
    if not seconds:
        yield
        return
    with metered() as usage:
        usage._arm(seconds * cores(), usage.elapsed + WALL_FACTOR * seconds)
        _meter.armed()
        try:
            yield
        finally:
            usage._disarm()


def remaining() -> float | None:
    """Wall-clock seconds left before this thread's work limit's backstop (None when none is set)."""
    usage = _meter.current()
    if usage is None or usage.wall_limit is None:
        return None
    return max(usage.wall_limit - usage.elapsed, 0.001)


def current_usage() -> Usage | None:
    """The Usage of the computation this thread runs (None outside `metered`)."""
    return _meter.current()
