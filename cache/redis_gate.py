"""The gate on Redis: the rate limit and the cached body in one round trip (cache/admit.lua)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import os
import threading
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path

import redis

from cache.bodies import ProcessBodies
from cache.gate import (
    LOCK_SEPARATOR,
    MOST_ANSWERS,
    MOST_ASKED_A_DAY,
    US_PER_SECOND,
    Admission,
    GateSettings,
    Spend,
    T,
    whole_seconds,
)
from cache.wire import Wire

_SCRIPTS = Path(__file__).parent


class _Members:
    """Unique sorted-set members for the rate windows without a system call per request (uuid4
    reads the kernel's random source each time): a random token per process plus a counter.
    A forked worker draws a new token, so it never reuses its parent's members."""

    def __init__(self) -> None:
        self._renew()
        os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._token = uuid.uuid4().hex[:12]
        self._counter = itertools.count()

    def next(self) -> str:
        return f"{self._token}{next(self._counter)}"


_members = _Members()


@dataclasses.dataclass(frozen=True)
class _Script:
    source: str

    @functools.cached_property
    def sha(self) -> str:
        return hashlib.sha1(self.source.encode()).hexdigest()


_ADMIT = _Script((_SCRIPTS / "admit.lua").read_text())
_FAIL = _Script((_SCRIPTS / "fail.lua").read_text())
_CHARGE = _Script((_SCRIPTS / "charge.lua").read_text())
# A fill lock's value is "<token>|<note>"; ARGV[1] is "<token>|" (the token and the separator).
_OURS = "local v = redis.call('GET', KEYS[1]) local ours = v and string.sub(v, 1, #ARGV[1]) == ARGV[1] "
# try_lock sent again: the lock is ours if the lost first send took it.
_LOCK_REPLAY = (_OURS + "if ours then return 1 end "
                "return redis.call('SET', KEYS[1], ARGV[1] .. ARGV[3], 'NX', 'PX', ARGV[2])")
_UNLOCK = _Script(_OURS + "if ours then return redis.call('DEL', KEYS[1]) end return 0")
# Keep a lock alive (and update its note) while it is still ours.
_RENEW = _Script(_OURS + "if ours then redis.call('SET', KEYS[1], ARGV[1] .. ARGV[3], 'PX', ARGV[2]) return 1 end "
                 "return 0")


def _admission(limit: int, allowed: int, remaining: int, reset_us: int, blocked_by: bytes | str,
               cached: bytes | None = None) -> Admission:
    """An Admission from admit.lua's answer."""
    return Admission(bool(allowed), limit, int(remaining), whole_seconds(reset_us),
                     blocked_by.decode() if isinstance(blocked_by, bytes) else blocked_by, cached)



_forget_after_fork: weakref.WeakSet[RedisGate] = weakref.WeakSet()


def _forget_all_after_fork() -> None:
    for gate in list(_forget_after_fork):
        gate._forget_connection()


os.register_at_fork(after_in_child=_forget_all_after_fork)


class RedisGate:
    """The gate on Redis, over one lean connection per process (cache/wire.py says why not a
    `redis.Redis` client). Scripts run by SHA and are loaded again when Redis answers NOSCRIPT
    (after a restart or a flush).

    `connection` is a `Wire`, or a function that makes one: it connects on first use, so a
    Redis that is down when the worker starts is a failure of a call (handled by
    ResilientGate), not of the start. A connection is never shared with a forked child.

    `bodies`: where the bodies it fetches or stores are kept in this process (its own
    ProcessBodies when not given; the one its ResilientGate's fallback uses, from `connect`).
    For a key held there the script is not asked for the body.
    """

    def __init__(self, connection: Wire | Callable[[], Wire], settings: GateSettings | None = None,
                 bodies: ProcessBodies | None = None) -> None:
        self._factory = connection if not isinstance(connection, Wire) else (lambda: connection)
        self._settings = settings = settings or GateSettings()
        self._connection: Wire | None = None
        self._proven = False            # the connection has answered at least once
        _forget_after_fork.add(self)
        self._lock = threading.Lock()   # one command at a time on the connection (threaded workers)
        self._window_us = settings.window_seconds * US_PER_SECOND
        self._prefix = settings.prefix
        self._bodies = bodies if bodies is not None else ProcessBodies(settings.process_cache_bytes)
        self.most_asked_a_day = MOST_ASKED_A_DAY  # distinct requests of a subscription's day that count

    # -- the wire ---------------------------------------------------------------------------

    def _command(self, *args, replay: tuple | None = None):
        """Send one command and read its answer. When a connection that has worked before fails
        (Redis restarted, or closed an idle connection), it is sent once more on a new
        connection, as `replay` if given: the command may have run before the connection broke
        (only its answer lost), so a command whose effect is not idempotent names a form that
        recognises its own earlier effect. A timeout is not retried (ResilientGate's job)."""
        with self._lock:
            if self._connection is None:
                self._connection, self._proven = self._factory(), False
            connection = self._connection
            try:
                answer = connection.call(*args)
            except redis.ConnectionError:
                if not self._proven:
                    raise
                self._proven = False
                answer = connection.call(*(replay or args))
            self._proven = True
            return answer

    def _script(self, script: _Script, keys: list[str], args: list, replay_args: list | None = None) -> list:
        command = ("EVALSHA", script.sha, len(keys), *keys)
        replay = (*command, *replay_args) if replay_args is not None else None
        try:
            return self._command(*command, *args, replay=replay)
        except redis.exceptions.NoScriptError:  # the replay form is safe whether or not a first send ran
            self._command("SCRIPT", "LOAD", script.source)
            return self._command(*(replay or (*command, *args)))

    def _key(self, kind: str, name: str) -> str:
        return f"{self._prefix}{kind}:{name}"

    # -- the gate ---------------------------------------------------------------------------

    def admit(self, subject: str, limit: int, cache_key: str | None, asked: str | None = None,
              ledger: str | None = None, answer: str | None = None) -> Admission:
        known = self._bodies.get(cache_key) if cache_key else None
        # cache/admit.lua's whole layout every time ("" where unused): the rate window, the body,
        # the requests asked recently, the privacy ledger (read only) and the subscription's set of
        # what it asked today (counted once per subject and UTC day; the script appends the day).
        keys = [
            self._key("rate", subject),
            self._key("body", cache_key) if cache_key and known is None else "",
            self._asked_key if asked else "",
            self._key("privacy", ledger) if ledger else "",
            self._asked_by_key(subject) if asked else "",
        ]
        member = _members.next()
        tail = [asked or "", answer or "", self.most_asked_a_day]
        args = [limit, self._window_us, member, "", *tail]
        replay = [limit, self._window_us, member, "replay", *tail]  # a request counted by a lost first send is not refused
        allowed, remaining, reset_us, blocked_by, body, ttl_ms, *read = self._script(_ADMIT, keys, args, replay)
        if body and cache_key:  # a body is fetched only under a cache key
            self._bodies.put(cache_key, body, ttl_ms / 1000)
        admission = _admission(limit, allowed, remaining, reset_us, blocked_by, (body or known) if allowed else None)
        if ledger and len(read) == 2:
            admission.ledger = (ledger, answer or "", int(read[0]), int(read[1]))
        return admission

    def peek(self, subject: str, limit: int) -> Admission:
        """The subscription's window as it stands, counting nothing."""
        allowed, remaining, reset_us, blocked_by, _, _ = self._script(
            _ADMIT, [self._key("rate", subject), ""], [limit, self._window_us, "", "peek"],
        )
        return _admission(limit, allowed, remaining, reset_us, blocked_by)

    def record_auth_failure(self, client: str) -> Admission:
        limit = self._settings.auth_failure_limit
        blocked, reset_us = self._script(
            _FAIL, [self._key("authfail", client)], [limit, self._window_us, _members.next()],
        )
        return Admission(allowed=not blocked, limit=limit, remaining=0, reset_seconds=whole_seconds(reset_us),
                         blocked_by="auth" if blocked else "", window_seconds=self._settings.window_seconds)

    def get(self, cache_key: str) -> bytes | None:
        body = self._bodies.get(cache_key)
        return body if body is not None else self._command("GET", self._key("body", cache_key))

    def decoded(self, cache_key: str, body: bytes, decode: Callable[[bytes], T]) -> T:
        """`decode(body)`, kept with the body in this process (`ProcessBodies.decoded`)."""
        return self._bodies.decoded(cache_key, body, decode)

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        self._command("SET", self._key("body", cache_key), body, "EX", max(1, ttl_seconds))
        self._bodies.put(cache_key, body, max(1, ttl_seconds))

    def try_lock(self, cache_key: str, ttl_seconds: float, note: str = "") -> str | None:
        token, key = uuid.uuid4().hex, self._key("fill", cache_key)
        ms = max(1, round(ttl_seconds * 1000))
        done = self._command("SET", key, token + LOCK_SEPARATOR + note, "NX", "PX", ms,
                             replay=("EVAL", _LOCK_REPLAY, 1, key, token + LOCK_SEPARATOR, ms, note))
        return token if done else None

    def renew(self, cache_key: str, token: str, ttl_seconds: float, note: str = "") -> bool:
        ms = max(1, round(ttl_seconds * 1000))
        return bool(self._script(_RENEW, [self._key("fill", cache_key)], [token + LOCK_SEPARATOR, ms, note]))

    def lock_note(self, cache_key: str) -> str | None:
        value = self._command("GET", self._key("fill", cache_key))
        if value is None:
            return None
        return value.decode(errors="replace").partition(LOCK_SEPARATOR)[2]

    def unlock(self, cache_key: str, token: str) -> None:
        self._script(_UNLOCK, [self._key("fill", cache_key)], [token + LOCK_SEPARATOR])

    @property
    def _asked_key(self) -> str:
        return self._prefix + "asked"

    def _asked_by_key(self, subject: str) -> str:
        """The name, less its day (days since 1970-01-01, UTC, appended by cache/admit.lua from the
        Redis server's clock), of the set of the requests `subject` asked that day."""
        return self._key("asked-by", subject) + ":"

    def charge(self, ledger: str, answer: str, amount: int, limit: int, ttl_seconds: int,
               most: int = MOST_ANSWERS) -> Spend:
        """Charge an answer to a privacy ledger, shared by every worker (cache/charge.lua)."""
        allowed, spent, charged = self._script(_CHARGE, [self._key("privacy", ledger)],
                                               [answer, amount, limit, max(1, ttl_seconds), "charge", most])
        return Spend(bool(allowed), int(spent), int(charged))

    def spent(self, ledger: str) -> int:
        return int(self._script(_CHARGE, [self._key("privacy", ledger)], ["", 0, 0, 1, "peek"])[1])

    def most_asked(self, count: int) -> list[tuple[str, float]]:
        flat = self._command("ZREVRANGE", self._asked_key, 0, max(0, count - 1), "WITHSCORES")
        return [(flat[i].decode(), float(flat[i + 1])) for i in range(0, len(flat), 2)]

    def fade_asked(self, factor: float, keep: int) -> None:
        """Scale every count by `factor` (recent asks weigh more than old ones) and keep only the
        `keep` most asked."""
        key = self._asked_key
        self._command("ZUNIONSTORE", key, 1, key, "WEIGHTS", factor)
        self._command("ZREMRANGEBYRANK", key, 0, -(keep + 1))

    def status(self) -> dict:
        self._command("PING")
        return {"backend": "redis", "ok": True, "shared": True}

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
            self._connection = None

    def _forget_connection(self) -> None:
        """In a forked child: the parent's socket is not ours to use (nor to close)."""
        self._connection = None
        self._lock = threading.Lock()

