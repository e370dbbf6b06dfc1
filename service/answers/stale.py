"""The previous answer, served while the current one is computed (HTTP's stale-while-revalidate,
RFC 5861), and when that is allowed.

When the hour turns (or new data lands) every cached answer has a new key, and the first request
for each finds nothing. Rather than a blank wait, such a request may get the request's previous
answer at once, labelled as what it is (its own `as_of` in the body and in `Last-Modified` and
`X-Signals-As-Of`, its `Age`, `Cache-Status: ...; ttl=-N; detail=stale-while-revalidate`,
`X-Cache: stale`), while the current answer computes in the background. Allowed only:

- for a request without an explicit `as_of` (asking for an hour means that hour);
- when the request does not say `Cache-Control: no-cache` (or `no-store`, or `max-age=0`): the
  documented way for a client to insist on the current answer, waiting for it;
- within the first `seconds` (SIGNALS_STALE_SECONDS, default 600) after the worker saw the
  `as_of` or the data generation change; a worker's first request counts as a change seen at the
  start of the clock's hour (a worker started at 12:03 behaves as one that lived through the
  turn; one started at 12:45 serves none): past that, the current answer is the answer;
- when the previous answer's `as_of` is at most one hour before the current one: never older.

Every answer of the current hour keeps such a copy (`keep`) under its request's identity
(cache_entry.request_identity), for an hour past the end of its own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading
import time

from cache import Gate
from service.answers.cache_entry import CacheEntry
from service.clock import Clock

_PREFIX = "previous:"
MOST_STALE = dt.timedelta(hours=1)
_NO_STALE = ("no-cache", "no-store", "max-age=0")


@dataclasses.dataclass(frozen=True)
class StaleAnswer:
    entry: CacheEntry
    as_of: dt.datetime
    generation: int
    age: int        # seconds since it was computed
    stale_for: int  # seconds since a newer answer became due


class StalePolicy:
    def __init__(self, seconds: float, clock: Clock) -> None:
        self.seconds = seconds
        self._clock = clock
        self._current: tuple[dt.datetime, int] | None = None
        self._since = -float("inf")  # monotonic time the window opened
        self._lock = threading.Lock()

    def seen(self, as_of: dt.datetime, generation: int) -> None:
        """Called with every request's current as_of and generation: notes when they changed."""
        if self._current != (as_of, generation):
            with self._lock:
                if self._current != (as_of, generation):
                    if self._current is None:
                        # A process's first sight: as if it had seen the hour turn. Which worker
                        # takes the first request after the turn is chance; whether it may answer
                        # stale must not be.
                        now = self._clock.now()
                        into_hour = (now - now.replace(minute=0, second=0, microsecond=0)).total_seconds()
                        self._since = time.monotonic() - into_hour
                    else:
                        self._since = time.monotonic()
                    self._current = (as_of, generation)

    def keep(self, gate: Gate, identity: str, entry: CacheEntry, as_of: dt.datetime, generation: int,
             ttl_seconds: int) -> None:
        head = json.dumps({"as_of": as_of.isoformat(), "generation": generation,
                           "at": self._clock.now().timestamp()}).encode()
        gate.put(_PREFIX + identity, head + b"\n" + entry.encode(), ttl_seconds + int(MOST_STALE.total_seconds()))

    def find(self, gate: Gate, identity: str, current_as_of: dt.datetime, current_generation: int,
             cache_control: str | None) -> StaleAnswer | None:
        if self.seconds <= 0 or _refuses_stale(cache_control):
            return None
        stale_for = time.monotonic() - self._since
        if stale_for > self.seconds:
            return None
        raw = gate.get(_PREFIX + identity)
        if raw is None:
            return None
        head, _, rest = raw.partition(b"\n")
        meta = json.loads(head)
        as_of = dt.datetime.fromisoformat(meta["as_of"])
        if as_of < current_as_of - MOST_STALE or as_of > current_as_of:
            return None
        if (as_of, int(meta["generation"])) == (current_as_of, current_generation):
            return None  # the current answer itself, kept a moment before the cache has it: wait for it
        age = max(0, round(self._clock.now().timestamp() - meta["at"]))
        return StaleAnswer(CacheEntry.decode(rest), as_of, int(meta["generation"]), age, max(1, round(stale_for)))


def _refuses_stale(cache_control: str | None) -> bool:
    if not cache_control:
        return False
    directives = [part.strip().lower().replace(" ", "") for part in cache_control.split(",")]
    return any(d in _NO_STALE for d in directives)
