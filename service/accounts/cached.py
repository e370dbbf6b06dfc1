"""Accepted keys remembered for a few seconds, so that the hot path makes no database query.

Only acceptances are cached (a new key works at once; failures are never remembered). An entry
lives `ttl_seconds` after the key's last check at most, and never past the key's own expiry, so
a revoked key stops working on every worker within `ttl_seconds` (SIGNALS_AUTH_CACHE_SECONDS;
0 turns the cache off).

Keys in use are checked again in batches: when a key has to be looked up, the remembered keys
that were used since their last check and whose last check is more than half a TTL old go with
it in the same query (oldest check first, at most `batch` keys in all). One query for a few
hundred keys costs about as much as a few single queries (bench/bench_key_checks.py; figures in
docs/benchmarks.md), so a worker serving many busy keys
makes a few queries per TTL instead of one per key. A key not used since its last check is not
checked again: it is forgotten when its time is up. A key a batch finds revoked, expired or gone
is forgotten; its next request gets the precise refusal.

A browser token (service/accounts/tokens.py) names the key that minted it by the key's id: the
token's key is looked up by that id (`authenticate_key_id`), remembered and checked again in the
same batches as the keys presented, so a token costs what a key costs, and a revoked key's tokens
stop working within the same `ttl_seconds`.

While the accounts database cannot be reached, a key accepted within the last `stale_seconds`
(SIGNALS_AUTH_STALE_SECONDS) keeps working from its last known answer, so an outage of the database
does not take the API down for the subscribers who were using it; a key not seen recently gets
503 until the database is back. Once it is back, every key is checked again as usual, so a key
revoked meanwhile stops working then. The outage is logged once when it starts and once when it
ends, with the number of requests served from last known answers and refused; never per request.

A plain dict rather than a cache library: every request looks a key up here, and a dict get and
one clock read cost a fraction of cachetools' TLRU (its LRU order and expiry bookkeeping, and
the lock it would need). The dict is kept in the order keys were last checked (a key checked again moves to the
end), which is the order batches take them in. The bound is kept on insertion: past `maxsize`
entries, the expired ones go, or else the oldest tenth.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from service.accounts import keys
from service.accounts.account_store import AccountStore
from service.accounts.principals import AuthFailure, KeyRef, Principal

log = logging.getLogger("signals.auth")

MAX_BATCH = 500  # keys per query: well under any database's limit on bound parameters


class _Entry:
    """A remembered key: who it is, when it was checked, until when it is trusted, and whether it
    was used since the check (set without the lock: a lost update only delays a batch check)."""

    __slots__ = ("principal", "checked", "until", "used")

    def __init__(self, principal: Principal, checked: float, until: float) -> None:
        self.principal = principal
        self.checked = checked
        self.until = until
        self.used = False


class AccountsUnavailable(Exception):
    """The accounts database cannot be reached and the key has no recent answer to fall back on."""


class CachedAuthenticator:
    def __init__(self, store: AccountStore, ttl_seconds: float, *, stale_seconds: float = 0.0,
                 maxsize: int = 10_000, batch: int = 256, timer: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._stale = max(0.0, stale_seconds) if ttl_seconds > 0 else 0.0
        self._outage: _Outage | None = None
        self._maxsize = maxsize
        self._batch = min(max(1, batch), MAX_BATCH)
        self._timer = timer
        # key hash (a key presented) or key id (a browser token's key) -> entry, in the order of the last check
        self._accepted: dict[KeyRef, _Entry] = {}
        self._lock = threading.Lock()  # for changes and scans; a dict read needs none

    def authenticate(self, presented: str | None) -> Principal | AuthFailure:
        """The key's principal or why it is refused; AccountsUnavailable when the database cannot
        be reached and the key has no recent answer."""
        if self._ttl <= 0 or not presented or not keys.looks_like_key(presented):
            return self._guarded(lambda: self._store.authenticate(presented), None)
        return self._remembered(keys.hash_key(presented))

    def authenticate_key_id(self, key_id: int) -> Principal | AuthFailure:
        """The principal of the key with this id, or why it is refused: what a browser token
        minted with that key acts for (AccountsUnavailable as `authenticate`)."""
        if self._ttl <= 0:
            return self._guarded(lambda: self._store.authenticate_refs([key_id])[key_id], None)
        return self._remembered(key_id)

    def _remembered(self, ref: KeyRef) -> Principal | AuthFailure:
        entry = self._accepted.get(ref)
        if entry is not None and self._timer() < entry.until:
            entry.used = True
            return self._valid(entry.principal)
        return self._guarded(lambda: self._check(ref), entry)

    def _valid(self, principal: Principal) -> Principal | AuthFailure:
        if principal.expires_at is None or principal.expires_at > self._store.clock.now():
            return principal
        return AuthFailure.EXPIRED

    def _guarded(self, ask: Callable[[], Principal | AuthFailure], entry: _Entry | None) -> Principal | AuthFailure:
        """`ask` the database; while it is down, the last known answer of a key checked within
        `stale_seconds`, else AccountsUnavailable. Logs the outage's start and end once each."""
        try:
            outcome = ask()
        except SQLAlchemyError as exc:
            now = self._timer()
            with self._lock:
                if self._outage is None:
                    self._outage = _Outage(now)
                    log.error("accounts database unavailable (%s): serving keys checked in the last %g s from "
                              "their last known answer, refusing others with 503, until it is back",
                              type(exc).__name__, self._stale)
                outage = self._outage
            if entry is not None and now < entry.checked + self._stale:
                outage.served += 1
                entry.used = True
                return self._valid(entry.principal)
            outage.refused += 1
            raise AccountsUnavailable from None
        if self._outage is not None:
            with self._lock:
                outage, self._outage = self._outage, None
            if outage is not None:
                log.warning("accounts database is back after %.0f s: %d requests were served from last known "
                            "answers, %d refused", self._timer() - outage.started, outage.served, outage.refused)
        return outcome

    def _check(self, digest: KeyRef) -> Principal | AuthFailure:
        """Look `digest` (a key's hash, or a token's key id) up, with the remembered keys that are
        due for a check (see the module). Answers count from before the query: an entry is never
        trusted longer than `ttl` after the database was asked."""
        started = self._timer()
        with self._lock:
            due = self._due(digest, started)
        outcomes = self._store.authenticate_refs([digest, *(known for known, _ in due)])
        with self._lock:
            for known, seen in due:
                # Another thread may have checked it meanwhile (and perhaps found it revoked):
                # an answer older than its is not applied.
                if self._accepted.get(known) is seen:
                    self._apply(known, outcomes[known], started)
            self._apply(digest, outcomes[digest], started)  # last: the newest in check order
        return outcomes[digest]

    def _due(self, digest: KeyRef, now: float) -> list[tuple[KeyRef, _Entry]]:
        """Entries to check along with `digest`: those used since their check, whether or not
        their time is up (keys checked in one batch run out together, and the key whose miss
        starts the next batch is one of them). Drops the unused ones past their time. Lock held."""
        checked_before = now - self._ttl / 2
        due: list[tuple[KeyRef, _Entry]] = []
        gone: list[KeyRef] = []
        for known, entry in self._accepted.items():
            if entry.checked > checked_before or len(due) >= self._batch - 1:
                break
            if entry.used and known != digest:
                due.append((known, entry))
            elif entry.until + self._stale <= now:  # kept as a last known answer until then
                gone.append(known)
        for known in gone:
            del self._accepted[known]
        return due

    def _apply(self, digest: KeyRef, outcome: Principal | AuthFailure, checked: float) -> None:
        """Remember an accepted key as checked at `checked`, or forget a refused one. Lock held."""
        self._accepted.pop(digest, None)  # re-inserted at the end: the dict stays in check order
        if not isinstance(outcome, Principal):
            return
        lifetime = self._ttl
        if outcome.expires_at is not None:
            lifetime = min(lifetime, (outcome.expires_at - self._store.clock.now()).total_seconds())
        if lifetime <= 0:
            return
        if len(self._accepted) >= self._maxsize:
            expired = [known for known, entry in self._accepted.items() if entry.until + self._stale <= checked]
            for known in expired or list(itertools.islice(self._accepted, max(1, self._maxsize // 10))):
                del self._accepted[known]
        self._accepted[digest] = _Entry(outcome, checked, checked + lifetime)


class _Outage:
    __slots__ = ("started", "served", "refused")

    def __init__(self, started: float) -> None:
        self.started = started
        self.served = 0
        self.refused = 0
