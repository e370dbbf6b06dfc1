"""Redis first, the local gate while Redis fails (`ResilientGate`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis

from cache.gate import MOST_ANSWERS, Admission, Spend, T
from cache.local_gate import LocalGate
from cache.redis_gate import RedisGate

log = logging.getLogger("signals.cache")


class ResilientGate:
    """Redis first; while Redis fails, the local gate answers, and Redis is retried at most once
    per `retry_seconds` so a hanging Redis costs one timeout per interval, not one per request.

    Give both gates one `ProcessBodies` (`cache.connect` does): the local gate then serves, while
    Redis is down, the bodies the worker already holds and those it computes meanwhile, under the
    same keys. Nothing else changes with the backend: the key of a body names what it depends
    on, so a body from either is right for its key."""

    def __init__(self, primary: RedisGate, fallback: LocalGate, retry_seconds: float = 2.0,
                 clock=time.monotonic) -> None:
        self._primary = primary
        self._fallback = fallback
        self._retry_seconds = retry_seconds
        self._clock = clock
        self._down_since: float | None = None
        self._next_try = 0.0
        self._state_lock = threading.Lock()

    @property
    def degraded(self) -> bool:
        return self._down_since is not None

    def _call(self, method: str, *args):
        if self._down_since is not None and self._clock() < self._next_try:
            return getattr(self._fallback, method)(*args)
        try:
            result = getattr(self._primary, method)(*args)
        except (redis.RedisError, OSError) as exc:
            with self._state_lock:
                if self._down_since is None:
                    self._down_since = self._clock()
                    log.warning("Redis unavailable (%s): serving from the per-process cache, with per-process "
                                "rate limits, until it returns", type(exc).__name__)
                self._next_try = self._clock() + self._retry_seconds
            return getattr(self._fallback, method)(*args)
        if self._down_since is not None:
            with self._state_lock:
                if self._down_since is not None:
                    log.warning("Redis is back after %.0f s: shared rate limits and cache restored",
                                self._clock() - self._down_since)
                    self._down_since = None
        return result

    def admit(self, subject: str, limit: int, cache_key: str | None, asked: str | None = None,
              ledger: str | None = None, answer: str | None = None) -> Admission:
        return self._call("admit", subject, limit, cache_key, asked, ledger, answer)

    def peek(self, subject: str, limit: int) -> Admission:
        return self._call("peek", subject, limit)

    def decoded(self, cache_key: str, body: bytes, decode: Callable[[bytes], T]) -> T:
        """Both gates keep their bodies in one ProcessBodies (`cache.connect`): no Redis call."""
        return self._fallback.decoded(cache_key, body, decode)

    def charge(self, ledger: str, answer: str, amount: int, limit: int, ttl_seconds: int,
               most: int = MOST_ANSWERS) -> Spend:
        return self._call("charge", ledger, answer, amount, limit, ttl_seconds, most)

    def spent(self, ledger: str) -> int:
        return self._call("spent", ledger)

    def record_auth_failure(self, client: str) -> Admission:
        return self._call("record_auth_failure", client)

    def get(self, cache_key: str) -> bytes | None:
        return self._call("get", cache_key)

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        self._call("put", cache_key, body, ttl_seconds)

    def try_lock(self, cache_key: str, ttl_seconds: float, note: str = "") -> str | None:
        return self._call("try_lock", cache_key, ttl_seconds, note)

    def renew(self, cache_key: str, token: str, ttl_seconds: float, note: str = "") -> bool:
        return self._call("renew", cache_key, token, ttl_seconds, note)

    def lock_note(self, cache_key: str) -> str | None:
        return self._call("lock_note", cache_key)

    def most_asked(self, count: int) -> list[tuple[str, float]]:
        return self._call("most_asked", count)

    def fade_asked(self, factor: float, keep: int) -> None:
        self._call("fade_asked", factor, keep)

    def unlock(self, cache_key: str, token: str) -> None:
        self._call("unlock", cache_key, token)

    def status(self) -> dict:
        if self._clock() >= self._next_try:
            self._call("status")  # probe now, so readiness reflects failure and recovery promptly
        if self.degraded:
            return {"backend": "redis", "ok": False, "shared": False, "degraded": True,
                    "detail": "Redis unavailable: per-process cache and rate limits"}
        return {"backend": "redis", "ok": True, "shared": True, "degraded": False}

    def close(self) -> None:
        self._primary.close()

