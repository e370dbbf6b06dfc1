"""The store's writer lock: one writer at a time. `lock` holds an exclusive `flock` on
`<data>/.lock`, released by the kernel when the process ends, however it ends. Every landing
(`writer.write_tables`, ClickHouse's too), `sweep` and `replacing` run under it."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from service.store import layout


class StoreBusy(Exception):
    """Another process holds the writer lock (an ingest is running)."""


_held = threading.local()  # data directories this thread holds the lock of -> depth


@contextlib.contextmanager
def lock(data_dir: Path, *, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the store's writer lock (re-entrant within a thread).

    With `wait`, blocks until the lock is free (calling `on_wait` first, if it has to wait);
    without, raises StoreBusy.
    """
    key = Path(data_dir).resolve()
    dirs = _held.__dict__.setdefault("dirs", {})
    if dirs.get(key, 0):
        dirs[key] += 1
        try:
            yield
        finally:
            dirs[key] -= 1
        return
    key.mkdir(parents=True, exist_ok=True)
    fd = os.open(key / layout.LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            if not wait:
                raise StoreBusy(f"another process is writing to {data_dir}") from None
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        dirs[key] = 1
        try:
            yield
        finally:
            dirs.pop(key, None)
    finally:
        os.close(fd)  # releases the lock
