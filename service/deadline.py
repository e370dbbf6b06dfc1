"""A time limit on computing one answer, so that no request ends by gunicorn killing its worker.

gunicorn's arbiter kills a sync worker that has not come back for its `timeout` (gunicorn.conf.py):
the client gets no answer at all and the worker's loaded data is lost. The cost check in front of
/query (engine/cost.py) refuses whatever could run that long; this is the backstop for what still
overruns (a machine under load, a store much larger than the bound was measured on): the resource
answers 503 problem+json instead.

How: `time_limit(seconds)` arms a one-shot ITIMER_REAL timer around the computation. At expiry its
SIGALRM handler raises `DeadlineExceeded` in the main thread, which unwinds the computation: its
frames and intermediates are released at once, and the worker takes its next request. Python runs
signal handlers between bytecodes, so a polars call in progress (Rust, GIL released) finishes
first and the exception comes as soon as it returns; the engine's steps each take seconds at most
on any query the cost check lets through, which is why gunicorn's timeout leaves room after the
deadline. The privacy stage's per-cell Python work is interrupted where it stands.

Why not a thread with a timed wait: polars cannot be cancelled, so the abandoned computation would
keep its CPU and memory until it finished by itself (43 s and 7.4 GiB for the query of issue 12),
and several of them could pile up in one worker. Why a BaseException: the computation's own
`except Exception` blocks must not swallow it (like KeyboardInterrupt). Only the code inside the
`with` block is interrupted: the timer is disarmed before anything else (a Redis call, logging)
runs.

A call into native code that does not return to Python (a query in embedded ClickHouse, chdb) is
not interrupted by the signal: such callers ask `remaining()` and hand the time left to the
database (ClickHouse's max_execution_time, service/clickhouse/connection.py), which stops the query.

Signals reach only the main thread: gunicorn's sync workers answer there. Elsewhere (a threaded
server, a test calling the app from a thread) no limit is applied.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

# When the innermost active time_limit expires (time.monotonic), for work done outside Python that
# the signal cannot interrupt: a ClickHouse query is given the time left as max_execution_time.
_expires_at: list[float] = []


def remaining() -> float | None:
    """Seconds left before the active time limit (None when none is active)."""
    if not _expires_at:
        return None
    return max(_expires_at[-1] - time.monotonic(), 0.001)


class DeadlineExceeded(BaseException):  # like KeyboardInterrupt: not an Exception, on purpose
    """The computation ran past its deadline (seconds in args[0])."""


def applies() -> bool:
    """Whether a deadline can be enforced here (the main thread of a platform with SIGALRM)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise DeadlineExceeded inside the block once it has run for `seconds` (None or 0: no limit)."""
    if not seconds or not applies():
        yield
        return
    armed = [True]

    def on_alarm(signum: int, frame: object) -> None:
        if armed[0]:
            armed[0] = False
            raise DeadlineExceeded(seconds)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    _expires_at.append(time.monotonic() + seconds)
    try:
        yield
    finally:
        armed[0] = False  # first: an alarm from here on raises nothing
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _expires_at.pop()
