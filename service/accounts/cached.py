"""Accepted keys remembered for a few seconds, so that the hot path makes no database query.

Only acceptances are cached (a new key works at once; failures are never remembered). An entry
lives `ttl_seconds` at most and never past the key's own expiry, so a revoked key stops working
on every worker within `ttl_seconds` (SIGNALS_AUTH_CACHE_SECONDS; 0 turns the cache off).

Keys are checked again in batches: when a key has to be looked up, the remembered keys whose
last check is more than half a TTL old go with it in the same query (oldest first, at most
`batch` keys in all). One query for a few hundred keys costs about what one costs for a single
key (measured: SQLite ~100 µs for one, ~1.2 ms for 256; PostgreSQL ~0.8 ms for one, ~4 ms for
256), so a worker serving many busy keys makes a few queries per TTL instead of one per key.
A key found revoked, expired or gone is forgotten; its next request gets the precise refusal.

A plain dict rather than a cache library: every request looks a key up here, and a dict get and
one clock read cost a fraction of cachetools' TLRU (its lock, LRU order and expiry heap, ~2 µs a
lookup). The dict is kept in the order keys were last checked (a key checked again moves to the
end), which is the order batches take them in. The bound is kept on insertion: past `maxsize`
entries, the expired ones go, or else the oldest tenth.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

from service.accounts import keys
from service.accounts.store import AccountStore, AuthFailure, Principal


class CachedAuthenticator:
    def __init__(self, store: AccountStore, ttl_seconds: float, *, maxsize: int = 10_000, batch: int = 256,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._maxsize = maxsize
        self._batch = max(1, batch)
        self._timer = timer
        # key hash -> (principal, checked at, kept until); in the order of the last check
        self._accepted: dict[str, tuple[Principal, float, float]] = {}
        self._lock = threading.Lock()  # for changes and scans; a dict read needs none

    def authenticate(self, presented: str | None) -> Principal | AuthFailure:
        if self._ttl <= 0 or not presented or not keys.looks_like_key(presented):
            return self._store.authenticate(presented)
        digest = keys.hash_key(presented)
        entry = self._accepted.get(digest)
        if entry is not None and self._timer() < entry[2]:
            principal = entry[0]
            if principal.expires_at is None or principal.expires_at > self._store.clock.now():
                return principal
            return AuthFailure.EXPIRED
        return self._check(digest)

    def _check(self, digest: str) -> Principal | AuthFailure:
        """Look `digest` up, with the remembered keys that are due for a check (see the module)."""
        with self._lock:
            due = self._due(digest, self._timer() - self._ttl / 2)
        outcomes = self._store.authenticate_digests([digest, *due])
        checked = self._timer()
        with self._lock:
            for known, outcome in outcomes.items():
                if isinstance(outcome, Principal):
                    self._remember(known, outcome, checked)
                else:
                    self._accepted.pop(known, None)
        return outcomes[digest]

    def _due(self, digest: str, checked_before: float) -> list[str]:
        due: list[str] = []
        for known, (_, checked, _) in self._accepted.items():
            if checked > checked_before or len(due) >= self._batch - 1:
                break
            if known != digest:
                due.append(known)
        return due

    def _remember(self, digest: str, principal: Principal, checked: float) -> None:
        """Called with the lock held."""
        lifetime = self._ttl
        if principal.expires_at is not None:
            lifetime = min(lifetime, (principal.expires_at - self._store.clock.now()).total_seconds())
        self._accepted.pop(digest, None)  # re-inserted at the end: the dict stays in check order
        if lifetime <= 0:
            return
        if len(self._accepted) >= self._maxsize:
            expired = [known for known, (_, _, until) in self._accepted.items() if until <= checked]
            for known in expired or list(itertools.islice(self._accepted, max(1, self._maxsize // 10))):
                del self._accepted[known]
        self._accepted[digest] = (principal, checked, checked + lifetime)
