"""A time limit on computing one answer, so that no request runs unbounded in a worker.

The cost check in front of /query (engine/cost.py) refuses whatever could run that long; this is
the backstop for what still overruns (a machine under load, a store much larger than the bound
was measured on): the resource answers 503 problem+json instead.

How: `time_limit(seconds)` starts a timer; at expiry it raises `DeadlineExceeded` asynchronously
in the thread running the computation (CPython's PyThreadState_SetAsyncExc), which unwinds it:
its frames and intermediates are released at once, and the thread takes its next request. This
works in any thread (the web workers serve requests from a thread pool, gunicorn_worker.py).
Python delivers the exception between bytecodes, so a polars call in progress (Rust, GIL
released) finishes first and the exception comes as soon as it returns; the engine's steps each
take seconds at most on any query the cost check lets through. The privacy stage's per-cell
Python work is interrupted where it stands.

Why not a timed wait on the computation: polars cannot be cancelled, so the abandoned
computation would keep its CPU and memory until it finished by itself, and several of them could
pile up in one worker. Why a BaseException: the computation's own `except Exception` blocks must
not swallow it (like KeyboardInterrupt). Only the code inside the `with` block is interrupted:
leaving the block disarms the timer and withdraws an exception that fired but was not yet raised.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator

# int PyThreadState_SetAsyncExc(unsigned long id, PyObject *exc): exc NULL withdraws a pending one.
_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi))


class DeadlineExceeded(BaseException):  # like KeyboardInterrupt: not an Exception, on purpose
    """The computation ran past its deadline."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise `exc` in the thread at its next bytecode; None withdraws one not yet raised."""
    if exc is None:
        _clear_async_exc(thread_id, None)
    else:
        _set_async_exc(thread_id, exc)


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise DeadlineExceeded inside the block once it has run for `seconds` (None or 0: no limit)."""
    if not seconds:
        yield
        return
    target = threading.get_ident()
    lock = threading.Lock()
    state = {"armed": True, "fired": False}

    def expire() -> None:
        with lock:
            if state["armed"]:
                state["armed"], state["fired"] = False, True
                _raise_in(target, DeadlineExceeded)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            state["armed"] = False  # from here on the timer raises nothing
            if state["fired"]:
                _raise_in(target, None)  # fired but not yet raised: the block finished first
        timer.cancel()
