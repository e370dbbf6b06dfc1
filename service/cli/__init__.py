"""Command line: `python -m service keys|data|worker|precompute ...`."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable


def until_stopped(run: Callable[[threading.Event], None]) -> None:
    """Run a long-lived loop that ends when the process is asked to stop (SIGTERM, as honcho and
    process managers send, or Ctrl-C): `run` gets the event it should watch."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    run(stop)
