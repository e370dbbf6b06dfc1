"""Accepted keys remembered for a few seconds, so that the hot path makes no database query.

Only acceptances are cached (a new key works at once; failures are never remembered). An entry
lives `ttl_seconds` at most and never past the key's own expiry, so a revoked key stops working
on every worker within `ttl_seconds` (SIGNALS_AUTH_CACHE_SECONDS; 0 turns the cache off).

A plain dict rather than a cache library: every request looks a key up here, and a dict get and
one clock read cost a fraction of cachetools' TLRU (its lock, LRU order and expiry heap, ~2 µs a
lookup). The bound is kept on insertion: past `maxsize` entries, the expired ones go, or else
the oldest tenth.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

from service.accounts import keys
from service.accounts.store import AccountStore, AuthFailure, Principal


class CachedAuthenticator:
    def __init__(self, store: AccountStore, ttl_seconds: float, *, maxsize: int = 10_000,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._maxsize = maxsize
        self._timer = timer
        self._accepted: dict[str, tuple[Principal, float]] = {}  # key hash -> (principal, kept until)
        self._lock = threading.Lock()  # for changes; a dict read needs none

    def authenticate(self, presented: str | None) -> Principal | AuthFailure:
        if self._ttl <= 0 or not presented or not keys.looks_like_key(presented):
            return self._store.authenticate(presented)
        digest = keys.hash_key(presented)
        entry = self._accepted.get(digest)
        if entry is not None and self._timer() < entry[1]:
            principal = entry[0]
            if principal.expires_at is None or principal.expires_at > self._store.clock.now():
                return principal
            return AuthFailure.EXPIRED
        outcome = self._store.authenticate(presented)
        if isinstance(outcome, Principal):
            self._remember(digest, outcome)
        return outcome

    def _remember(self, digest: str, principal: Principal) -> None:
        lifetime = self._ttl
        if principal.expires_at is not None:
            lifetime = min(lifetime, (principal.expires_at - self._store.clock.now()).total_seconds())
        if lifetime <= 0:
            return
        with self._lock:
            now = self._timer()
            if digest not in self._accepted and len(self._accepted) >= self._maxsize:
                expired = [known for known, (_, until) in self._accepted.items() if until <= now]
                for known in expired or list(itertools.islice(self._accepted, max(1, self._maxsize // 10))):
                    del self._accepted[known]
            self._accepted[digest] = (principal, now + lifetime)
