"""How many answers this machine computes at once, and the queue in front of them.

Every process of a deployment on one machine (each gunicorn worker, the precompute process)
computes only while it holds one of `count` **slots**: files `slot-<i>` under `<directory>`, each
held with an exclusive `flock`. `flock` belongs to the open file, so a process that dies lets go of
its slot at once (the kernel closes its files): nothing to clean up, nothing held by the dead. The
default count is the machine's cores: polars uses every core by itself, so two computations on
two cores already share them, and a third only slows the other two.

A computation waiting for a slot holds a **ticket**: a file under `<directory>/queue/` named by
when it joined (so the names sort in arrival order), held with `flock` while it waits. The first
`count` tickets in that order may take a free slot; the others wait their turn. A ticket whose
lock can be taken belongs to a process that died and is removed by whoever finds it.

How long a computation of each endpoint takes is kept beside them (`durations/<endpoint>`: the
last one measured on this machine, by any process: its wall seconds and its CPU seconds), and each
ticket and held slot records how long its computation is expected to take, so `estimate()` can say
when a computation queued now would start (list scheduling over the running and the queued ones):
what a request's `Retry-After` and its decision to wait are made of. A running computation's
holder keeps its slot's expectation current (`report`: the seconds it is now expected to need,
from its pace), so a computation slowed by its neighbours makes the queue's estimate later too.
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

POLL_SECONDS = 0.02        # how often a queued computation looks for its turn
_REAP_EVERY_SECONDS = 1.0  # how often a waiter checks that the tickets ahead of it are alive
_counter = itertools.count()


class ComputeSlots:
    """`count` slots shared by every process that uses the same `directory`."""

    def __init__(self, directory: Path, count: int) -> None:
        if count < 1:
            raise ValueError("at least one compute slot")
        self.count = count
        self._dir = Path(directory)
        self._queue = self._dir / "queue"
        self._queue.mkdir(parents=True, exist_ok=True)
        self._slots = [self._dir / f"slot-{i}" for i in range(count)]
        for path in self._slots:
            path.touch(exist_ok=True)
        self._durations = self._dir / "durations"
        self._durations.mkdir(exist_ok=True)
        self._known: dict[str, tuple[float, float, float | None]] = {}  # endpoint -> (read at, seconds, CPU s)
        self._local = threading.Lock()
        self._named: dict[str, tuple[int, float]] = {}  # name -> (slot fd, taken at) of the slots held by name
        self._waiting: dict[str, str] = {}  # name -> ticket of the computations queued by name

    # -- how long computations take ----------------------------------------------------------------

    def expected(self, endpoint: str, default: float | None = 1.0) -> float | None:
        """How long a computation of `endpoint` is expected to take: the last one measured on this
        machine (read at most once a second), else `default`."""
        known = self._measured(endpoint)
        return default if known is None else known[0]

    def expected_cpu(self, endpoint: str) -> float | None:
        """The CPU seconds the last computation of `endpoint` on this machine used (None: unknown)."""
        known = self._measured(endpoint)
        return None if known is None else known[1]

    def _measured(self, endpoint: str) -> tuple[float, float | None] | None:
        known = self._known.get(endpoint)
        now = time.monotonic()
        if known is not None and now - known[0] < 1.0:
            return known[1], known[2]
        try:
            fields = (self._durations / endpoint).read_text().split()
            seconds = float(fields[0])
            cpu = float(fields[1]) if len(fields) > 1 else None
        except (FileNotFoundError, ValueError, IndexError):
            return None
        self._known[endpoint] = (now, seconds, cpu)
        return seconds, cpu

    def record(self, endpoint: str, seconds: float, cpu: float | None = None) -> None:
        """A computation of `endpoint` took `seconds` and used `cpu` CPU seconds (written whole: a
        rename, never half a number)."""
        staged = self._durations / f".{endpoint}.{os.getpid()}.{threading.get_ident()}"
        staged.write_text(f"{seconds:.3f}" + ("" if cpu is None else f" {cpu:.3f}"))
        os.replace(staged, self._durations / endpoint)
        self._known[endpoint] = (time.monotonic(), seconds, cpu)

    # -- taking a slot -------------------------------------------------------------------------

    @contextlib.contextmanager
    def slot(self, expected_seconds: float, *, leave_free: int = 0,
             on_queued: Callable[[float], None] | None = None, name: str | None = None) -> Iterator[float]:
        """Hold a slot for the block; yields the seconds spent waiting for it. `leave_free`: take a
        slot only while at least that many others stay free (background work leaves room for
        requests). `on_queued(start_estimate)` is called once if the computation has to wait.
        `name`: what `report` knows the held slot by."""
        joined = time.monotonic()
        # A free slot is taken at once only when nobody waits: no jumping the queue.
        held = None if self._tickets() else self._take(expected_seconds, leave_free)
        ticket = None
        try:
            if held is None:
                ticket = self._join(expected_seconds, background=leave_free > 0)
                if name is not None:
                    self._waiting[name] = ticket[0].name
                if on_queued is not None:
                    on_queued(self.estimate(before=ticket[0].name))
                held = self._wait(ticket, expected_seconds, leave_free)
        finally:
            if ticket is not None:
                if name is not None:
                    self._waiting.pop(name, None)
                self._leave(ticket)
        if name is not None:
            with self._local:
                self._named[name] = (held, time.time())
        try:
            yield time.monotonic() - joined
        finally:
            if name is not None:
                with self._local:
                    self._named.pop(name, None)
            self._release(held)

    def starts_in(self, name: str) -> float | None:
        """Seconds until the computation queued by `name` is expected to start (None: not queued)."""
        ticket = self._waiting.get(name)
        return None if ticket is None else self.estimate(before=ticket)

    def report(self, name: str, seconds_left: float) -> None:
        """The computation holding the slot named `name` now expects to need `seconds_left` more
        (what `estimate` reads of it; nothing when no slot is held by that name)."""
        with self._local:
            found = self._named.get(name)
            if found is None:
                return
            fd, taken = found
            expected = time.time() - taken + seconds_left
            with contextlib.suppress(OSError):
                os.pwrite(fd, f"{taken:.3f} {expected:.3f}".ljust(40).encode(), 0)

    def _take(self, expected_seconds: float, leave_free: int) -> int | None:
        """A free slot's file descriptor, locked, or None. With `leave_free`, only while that many
        other slots would stay free."""
        taken, free = None, 0
        for path in self._slots:
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if taken is None:
                taken = fd
            else:
                free += 1
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                if free >= leave_free:
                    break
        if taken is not None and free < leave_free:
            fcntl.flock(taken, fcntl.LOCK_UN)
            os.close(taken)
            return None
        if taken is not None:
            os.ftruncate(taken, 0)
            os.pwrite(taken, f"{time.time():.3f} {expected_seconds:.3f}".encode(), 0)
        return taken

    def _free(self) -> int:
        """How many slots are free now."""
        free = 0
        for path in self._slots:
            fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                free += 1
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
        return free

    def _release(self, fd: int) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def _join(self, expected_seconds: float, background: bool) -> tuple[Path, int]:
        kind = "b" if background else "r"  # background work, or a request's
        name = f"{time.time_ns():020d}-{os.getpid()}-{next(_counter)}-{kind}-{round(expected_seconds * 1000)}"
        path = self._queue / name
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return path, fd

    def _leave(self, ticket: tuple[Path, int]) -> None:
        path, fd = ticket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def _wait(self, ticket: tuple[Path, int], expected_seconds: float, leave_free: int) -> int:
        reaped = 0.0  # the tickets ahead are checked at once, then every _REAP_EVERY_SECONDS
        while True:
            ahead = self._ahead(ticket[0].name)
            if time.monotonic() - reaped > _REAP_EVERY_SECONDS:
                ahead = [name for name in ahead if self._alive(name)]
                reaped = time.monotonic()
            # Only as many of the first in line as there are free slots may take one: in order.
            if len(ahead) < self.count and len(ahead) < self._free():
                held = self._take(expected_seconds, leave_free)
                if held is not None:
                    return held
            time.sleep(POLL_SECONDS)

    def _tickets(self) -> list[str]:
        try:
            return sorted(os.listdir(self._queue))
        except FileNotFoundError:
            return []

    def _ahead(self, mine: str) -> list[str]:
        """The tickets before `mine` in line. A request's ticket does not wait behind background
        work (which takes a slot only while another stays free): requests overtake it."""
        request = "-r-" in mine
        return [name for name in self._tickets() if name < mine and not (request and "-b-" in name)]

    def _alive(self, name: str) -> bool:
        """A ticket whose lock can be taken was left by a process that died: removed."""
        path = self._queue / name
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock we may have taken
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return False

    # -- what is going on ------------------------------------------------------------------------

    def running(self) -> list[tuple[float, float]]:
        """(started, expected seconds) of each computation holding a slot (wall-clock seconds)."""
        found = []
        for path in self._slots:
            fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                continue  # free
            except BlockingIOError:
                text = os.pread(fd, 64, 0).decode(errors="replace").split()
            finally:
                os.close(fd)
            try:
                found.append((float(text[0]), float(text[1])))
            except (IndexError, ValueError):  # taken a moment ago, not yet written
                found.append((time.time(), 1.0))
        return found

    def queued(self) -> list[float]:
        """The expected seconds of each queued computation, in the order they will run."""
        expected = []
        for name in self._tickets():
            try:
                expected.append(int(name.rsplit("-", 1)[1]) / 1000)
            except (IndexError, ValueError):
                continue
        return expected

    def estimate(self, before: str | None = None) -> float:
        """Seconds until a computation queued now (or holding ticket `before`) would start."""
        now = time.time()
        # A computation past its expected time is assumed to need a quarter of it again.
        free_at = [max(0.25 * expected, started + expected - now) for started, expected in self.running()]
        free_at += [0.0] * (self.count - len(free_at))
        heapq.heapify(free_at)
        for name in self._tickets():
            if before is not None and name >= before:
                break
            try:
                expected = int(name.rsplit("-", 1)[1]) / 1000
            except (IndexError, ValueError):
                continue
            heapq.heappush(free_at, heapq.heappop(free_at) + expected)
        return free_at[0]
