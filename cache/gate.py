"""The gate every authenticated request passes: rate limit, cached body (and, for wrong keys, the
block of an address after repeated failures). This module is the interface: what a gate answers
(`Admission`), what it offers (`Gate`) and its settings. The implementations:

- `RedisGate` (redis_gate.py) does it in one Redis round trip (cache/admit.lua), shared by every
  worker and node;
- `LocalGate` (local_gate.py) has the same interface in process memory, for a single process
  without Redis;
- `ResilientGate` (resilient_gate.py) uses Redis and falls back to a LocalGate while Redis is down
  or hanging, logging the degradation once and recovering by itself.

Both keep cached bodies in a `ProcessBodies` (bodies.py), this process's size-bounded LRU. Inside
a ResilientGate the two share one: the bodies a worker has fetched from Redis or computed are the
ones it serves while Redis is down, so an outage costs the shared cache and exact cross-worker
limits, not the cache itself.

This package knows Redis, not Falcon: callers pass plain strings and bytes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Protocol, TypeVar

T = TypeVar("T")

WINDOW_SECONDS = 60
US_PER_SECOND = 1_000_000  # the gates count time in microseconds


class Admission:
    """The gate's answer for one request. (A plain class with slots: one is made per request.)"""

    __slots__ = ("allowed", "limit", "remaining", "reset_seconds", "blocked_by", "cached", "window_seconds",
                 "ledger")

    def __init__(self, allowed: bool, limit: int, remaining: int, reset_seconds: int, blocked_by: str = "",
                 cached: bytes | None = None, window_seconds: int = WINDOW_SECONDS,
                 ledger: tuple[str, str, int, int] | None = None) -> None:
        self.allowed = allowed
        self.limit = limit
        self.remaining = remaining
        # Whole seconds until a slot frees: until the oldest counted request leaves the window;
        # for a refusal, until a request would be accepted (for a blocked address, its block's end).
        self.reset_seconds = reset_seconds
        self.blocked_by = blocked_by          # "" | "rate" | "auth"
        self.cached = cached
        self.window_seconds = window_seconds
        # Read with the admission when asked (`Gate.admit`'s `ledger` and `answer`): (ledger, answer,
        # micro-epsilon the ledger has spent, micro-epsilon the answer was charged so far).
        self.ledger = ledger

    @property
    def retry_after(self) -> int:
        """Whole seconds, at least 1, never earlier than the next request that would be accepted."""
        return max(1, self.reset_seconds)

    def __repr__(self) -> str:
        return (f"Admission(allowed={self.allowed}, limit={self.limit}, remaining={self.remaining}, "
                f"reset_seconds={self.reset_seconds}, blocked_by={self.blocked_by!r}, cached={self.cached is not None})")


# The most answers one privacy ledger remembers (a subscription's month): what it asks decides how
# many, so the memory is bounded (about 100 bytes each in Redis); past it, an answer asked again is
# charged again, never less (cache/charge.lua).
MOST_ANSWERS = 100_000
# At most this many distinct requests of one subscription in a UTC day count among the most asked
# (precompute's order): its day's set stays under about 1 MB in Redis, whatever its rate limit.
MOST_ASKED_A_DAY = 10_000


@dataclasses.dataclass(frozen=True)
class Spend:
    """A privacy ledger's answer to a charge (service/privacy/budget.py): whether the answer may be
    shown, what the ledger has spent after it, and what this charge added (micro-epsilon; a
    refusal's `charged` is what the answer would have cost)."""

    allowed: bool
    spent: int
    charged: int


# A fill lock's value is "<token>|<note>": the note says when its holder expects the answer
# (service/answers/flights.py), so waiters can decide at once whether to wait.
LOCK_SEPARATOR = "|"


def whole_seconds(micros: float) -> int:
    """Microseconds as whole seconds, rounded up, never negative (an Admission's reset_seconds)."""
    return max(0, math.ceil(micros / US_PER_SECOND))


class Gate(Protocol):
    # `admit` counts the request in `subject`'s rate window (the subscription's, "sub:<id>") and
    # fetches the body under `cache_key`; accepted, it counts `asked` (the request's identity) among
    # the requests asked recently, once per `subject` and UTC day, so `most_asked` ranks requests by
    # how many subscriptions asked them, not how often; and reads what `ledger` says of `answer`.
    def admit(self, subject: str, limit: int, cache_key: str | None, asked: str | None = None,
              ledger: str | None = None, answer: str | None = None) -> Admission: ...
    def peek(self, subject: str, limit: int) -> Admission: ...
    def record_auth_failure(self, client: str) -> Admission: ...
    def get(self, cache_key: str) -> bytes | None: ...
    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None: ...
    def decoded(self, cache_key: str, body: bytes, decode: Callable[[bytes], T]) -> T: ...
    def try_lock(self, cache_key: str, ttl_seconds: float, note: str = "") -> str | None: ...
    def renew(self, cache_key: str, token: str, ttl_seconds: float, note: str = "") -> bool: ...
    def lock_note(self, cache_key: str) -> str | None: ...
    def unlock(self, cache_key: str, token: str) -> None: ...
    def most_asked(self, count: int) -> list[tuple[str, float]]: ...
    def charge(self, ledger: str, answer: str, amount: int, limit: int, ttl_seconds: int,
               most: int = ...) -> Spend: ...
    def spent(self, ledger: str) -> int: ...
    def fade_asked(self, factor: float, keep: int) -> None: ...
    def status(self) -> dict: ...
    def close(self) -> None: ...


@dataclasses.dataclass(frozen=True)
class GateSettings:
    prefix: str = "signals:"
    window_seconds: int = WINDOW_SECONDS
    auth_failure_limit: int = 20   # failed authentications per client address per window
    process_cache_bytes: int = 64 << 20  # bodies kept in this process's memory (ProcessBodies)

