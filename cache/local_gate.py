"""The gate in this process's memory: exact for one process, per-process with several."""

from __future__ import annotations

import collections
import threading
import time
import uuid
from collections.abc import Callable

from cache.bodies import ProcessBodies
from cache.gate import MOST_ANSWERS, MOST_ASKED_A_DAY, US_PER_SECOND, Admission, GateSettings, Spend, T, whole_seconds

_SWEEP_EVERY = 1024  # failed authentications between two sweeps of a LocalGate's stale windows
_SECONDS_PER_DAY = 86_400


class LocalGate:
    """The same gate in this process's memory: exact for one process, per-process with several.

    `clock` measures the windows and expiries; `wall_clock` (seconds since the epoch) says which
    UTC day it is, for counting a request asked once per subject and day (`admit`)."""

    def __init__(self, settings: GateSettings | None = None, clock=time.monotonic,
                 bodies: ProcessBodies | None = None, wall_clock: Callable[[], float] = time.time) -> None:
        self._settings = settings = settings or GateSettings()
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._windows: dict[str, collections.deque[float]] = {}
        self._bodies = bodies if bodies is not None else ProcessBodies(settings.process_cache_bytes, clock)
        self._fill_locks: dict[str, tuple[float, str, str]] = {}  # key -> (expiry, token, note)
        self._asked: collections.Counter[str] = collections.Counter()
        # What each subject asked in the UTC day `_asked_day` (days since 1970-01-01), forgotten
        # when the day changes (cache/admit.lua's asked-by sets).
        self._asked_day = -1
        self._asked_by: dict[str, set[str]] = {}
        self.most_asked_a_day = MOST_ASKED_A_DAY
        # Privacy ledgers: name -> (expiry, micro-epsilon spent, answer -> micro-epsilon charged).
        self._ledgers: dict[str, tuple[float, int, dict[str, int]]] = {}
        self._failures_recorded = 0

    def _sweep(self, now: float) -> None:
        """Drop the windows whose entries have all aged out (addresses that failed once and went
        quiet are never looked at again otherwise). Lock held."""
        for key in [key for key, window in self._windows.items()
                    if not window or window[-1] <= now - self._settings.window_seconds]:
            del self._windows[key]

    def _trim(self, key: str, now: float, *, create: bool = False) -> collections.deque[float]:
        """The live entries of a window; `create` for one about to grow. A window is created only
        when something is counted (a request of a subscription, a failure of an address) and
        dropped when found empty, so addresses that never fail cost no memory."""
        window = self._windows.get(key)
        if window is None:
            window = collections.deque()
            if create:
                self._windows[key] = window
            return window
        while window and window[0] <= now - self._settings.window_seconds:
            window.popleft()
        if not window and not create:
            del self._windows[key]
        return window

    def _reset(self, window: collections.deque[float], now: float, limit: int | None = None) -> int:
        """Seconds until a slot frees: until the (len - limit)-th oldest entry leaves the window."""
        if not window:
            return 0
        index = max(0, len(window) - limit) if limit is not None else 0
        # The age subtracted from the window, not (entry + window - now): with a large monotonic
        # clock that sum rounds up, and a fresh entry's 60 s became 61.
        return whole_seconds((self._settings.window_seconds - (now - window[index])) * US_PER_SECOND)

    def admit(self, subject: str, limit: int, cache_key: str | None, asked: str | None = None,
              ledger: str | None = None, answer: str | None = None) -> Admission:
        now = self._clock()
        with self._lock:
            window = self._trim("rate:" + subject, now, create=True)
            if len(window) >= limit:
                return Admission(False, limit, 0, self._reset(window, now, limit), "rate")
            window.append(now)
            if asked:
                self._count_asked(subject, asked)
            remaining, reset = limit - len(window), self._reset(window, now)
            read = None
            if ledger:
                expiry, spent, answers = self._ledgers.get(ledger, (0.0, 0, {}))
                read = (ledger, answer or "", *((spent, answers.get(answer or "", 0)) if expiry > now else (0, 0)))
        return Admission(True, limit, remaining, reset, "", self._bodies.get(cache_key) if cache_key else None,
                         ledger=read)

    def _count_asked(self, subject: str, asked: str) -> None:
        """Count `asked` once more, the first time `subject` asks it this UTC day, among the first
        `most_asked_a_day` distinct requests it asks that day (cache/admit.lua). Lock held."""
        day = int(self._wall_clock() // _SECONDS_PER_DAY)
        if day != self._asked_day:
            self._asked_day, self._asked_by = day, {}
        seen = self._asked_by.setdefault(subject, set())
        if asked not in seen and len(seen) < self.most_asked_a_day:
            seen.add(asked)
            self._asked[asked] += 1

    def peek(self, subject: str, limit: int) -> Admission:
        now = self._clock()
        with self._lock:
            window = self._trim("rate:" + subject, now)
            if len(window) >= limit:
                return Admission(False, limit, 0, self._reset(window, now, limit), "rate")
            return Admission(True, limit, limit - len(window), self._reset(window, now), "")

    def record_auth_failure(self, client: str) -> Admission:
        now = self._clock()
        limit = self._settings.auth_failure_limit
        with self._lock:  # as fail.lua: attempts while blocked are refused, not counted
            self._failures_recorded += 1
            if self._failures_recorded % _SWEEP_EVERY == 0:
                self._sweep(now)
            failures = self._trim("authfail:" + client, now, create=True)
            if len(failures) >= limit:
                return Admission(False, limit, 0, self._reset(failures, now, limit), "auth",
                                 window_seconds=self._settings.window_seconds)
            failures.append(now)
            return Admission(True, limit, 0, self._reset(failures, now), "", window_seconds=self._settings.window_seconds)

    def get(self, cache_key: str) -> bytes | None:
        return self._bodies.get(cache_key)

    def decoded(self, cache_key: str, body: bytes, decode: Callable[[bytes], T]) -> T:
        """`decode(body)`, kept with the body in this process (`ProcessBodies.decoded`)."""
        return self._bodies.decoded(cache_key, body, decode)

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        self._bodies.put(cache_key, body, max(1, ttl_seconds))

    def try_lock(self, cache_key: str, ttl_seconds: float, note: str = "") -> str | None:
        now = self._clock()
        with self._lock:
            held = self._fill_locks.get(cache_key)
            if held and held[0] > now:
                return None
            token = uuid.uuid4().hex
            self._fill_locks[cache_key] = (now + ttl_seconds, token, note)
            return token

    def renew(self, cache_key: str, token: str, ttl_seconds: float, note: str = "") -> bool:
        now = self._clock()
        with self._lock:
            held = self._fill_locks.get(cache_key)
            if held is None or held[1] != token or held[0] <= now:
                return False
            self._fill_locks[cache_key] = (now + ttl_seconds, token, note)
            return True

    def lock_note(self, cache_key: str) -> str | None:
        with self._lock:
            held = self._fill_locks.get(cache_key)
            return held[2] if held and held[0] > self._clock() else None

    def unlock(self, cache_key: str, token: str) -> None:
        with self._lock:
            held = self._fill_locks.get(cache_key)
            if held is not None and held[1] == token:
                del self._fill_locks[cache_key]

    def charge(self, ledger: str, answer: str, amount: int, limit: int, ttl_seconds: int,
               most: int = MOST_ANSWERS) -> Spend:
        """cache/charge.lua in this process's memory (a ledger lives until its period's end)."""
        now = self._clock()
        with self._lock:
            expiry, spent, answers = self._ledgers.get(ledger, (0.0, 0, {}))
            if expiry <= now:
                spent, answers = 0, {}
            delta = amount - answers.get(answer, 0)
            if delta <= 0:
                return Spend(True, spent, 0)
            if spent + delta > limit:
                return Spend(False, spent, delta)
            if answer in answers or len(answers) < most:
                answers[answer] = amount
            self._ledgers[ledger] = (now + max(1, ttl_seconds), spent + delta, answers)
            return Spend(True, spent + delta, delta)

    def spent(self, ledger: str) -> int:
        with self._lock:
            expiry, spent, _answers = self._ledgers.get(ledger, (0.0, 0, {}))
            return spent if expiry > self._clock() else 0

    def most_asked(self, count: int) -> list[tuple[str, float]]:
        with self._lock:
            return [(identity, float(n)) for identity, n in self._asked.most_common(count)]

    def fade_asked(self, factor: float, keep: int) -> None:
        with self._lock:
            kept = self._asked.most_common(keep)
            self._asked = collections.Counter({identity: n * factor for identity, n in kept})

    def status(self) -> dict:
        return {"backend": "in-process", "ok": True, "shared": False}

    def close(self) -> None:
        with self._lock:
            self._windows.clear()
        self._bodies.clear()

