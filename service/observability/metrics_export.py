"""Serving the machine's metrics to Prometheus (prometheus_client's multiprocess mode).

`use_directory` is called by each process's entry point before anything imports
prometheus_client (gunicorn.conf.py for the web process and its workers, `python -m service`
for the worker, precompute and data commands): their values then go to files in one directory
(`<SIGNALS_RUN_DIR>/metrics`), and `serve` (the web process's master) answers a scrape with the sum
over every live process, and the counts of those that ended. A process that ends marks itself
dead (`forget`), so its gauges stop counting.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from pathlib import Path

_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
_FILE = re.compile(r"^[a-z_]+_(\d+)\.db$")


def use_directory(directory: Path) -> Path:
    """Point this process (and the processes it starts) at `directory`, unless the environment
    already names one. Must run before prometheus_client is imported."""
    if "prometheus_client" in sys.modules and not os.environ.get(_VARIABLE):
        # Its values stay in this process (the processes it starts do use the directory).
        logging.getLogger("signals.metrics").warning(
            "prometheus_client was imported before its multiprocess directory was set")
    path = Path(os.environ.setdefault(_VARIABLE, str(directory)))
    path.mkdir(parents=True, exist_ok=True)
    return path


def sweep(directory: Path) -> None:
    """Remove the files of processes that no longer run (a previous run's, or ones killed without
    marking themselves dead); prometheus_client asks for a clean directory at start."""
    for path in directory.glob("*.db"):
        match = _FILE.match(path.name)
        if match and not _alive(int(match.group(1))):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def forget(pid: int) -> None:
    """A process ended: its live gauges stop counting (counters and histograms stay summed)."""
    if os.environ.get(_VARIABLE):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def serve(host: str, port: int) -> None:
    """Answer scrapes on host:port (a thread of this process) with every process's metrics."""
    from prometheus_client import CollectorRegistry, multiprocess, start_http_server

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    start_http_server(port, addr=host, registry=registry)
