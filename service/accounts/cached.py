"""Accepted keys remembered for a few seconds, so that the hot path makes no database query.

Only acceptances are cached (a new key works at once; failures are never remembered). An entry
lives `ttl_seconds` at most and never past the key's own expiry, so a revoked key stops working
on every worker within `ttl_seconds` (SIGNALS_AUTH_CACHE_SECONDS; 0 turns the cache off).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import cachetools

from service.accounts import keys
from service.accounts.store import AccountStore, AuthFailure, Principal


class CachedAuthenticator:
    def __init__(self, store: AccountStore, ttl_seconds: float, *, maxsize: int = 10_000,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._lock = threading.Lock()
        self._cache: cachetools.TLRUCache = cachetools.TLRUCache(maxsize=maxsize, ttu=self._time_to_use, timer=timer)

    def _time_to_use(self, _digest: str, principal: Principal, now: float) -> float:
        lifetime = self._ttl
        if principal.expires_at is not None:
            lifetime = min(lifetime, (principal.expires_at - self._store.clock.now()).total_seconds())
        return now + lifetime

    def authenticate(self, presented: str | None) -> Principal | AuthFailure:
        if self._ttl <= 0 or not presented or not keys.looks_like_key(presented):
            return self._store.authenticate(presented)
        digest = keys.hash_key(presented)
        with self._lock:
            cached = self._cache.get(digest)
        if cached is not None:
            if cached.expires_at is None or cached.expires_at > self._store.clock.now():
                return cached
            return AuthFailure.EXPIRED
        outcome = self._store.authenticate(presented)
        if isinstance(outcome, Principal):
            with self._lock:
                self._cache[digest] = outcome
        return outcome
