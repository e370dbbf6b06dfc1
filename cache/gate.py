"""The gate every authenticated request passes: rate limit, client block, cached body.

`RedisGate` does all three in one Redis round trip (cache/admit.lua) and is shared by every
worker and node. `LocalGate` has the same interface in process memory, for a single process
without Redis. `ResilientGate` uses Redis and falls back to a LocalGate while Redis is down or
hanging, logging the degradation once and recovering by itself.

Both keep cached bodies in a `ProcessBodies`, this process's size-bounded LRU. Inside a
ResilientGate the two share one: the bodies a worker has fetched from Redis or computed are
the ones it serves while Redis is down, so an outage costs the shared cache and exact
cross-worker limits, not the cache itself.

This package knows Redis, not Falcon: callers pass plain strings and bytes.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import itertools
import logging
import math
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import redis

from cache.wire import Wire

log = logging.getLogger("signals.cache")

WINDOW_SECONDS = 60
_US = 1_000_000
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
# try_lock sent again: the lock is ours if the lost first send took it.
_LOCK_REPLAY = ("if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end "
                "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2])")
_UNLOCK = _Script("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0")


class Admission:
    """The gate's answer for one request. (A plain class with slots: one is made per request.)"""

    __slots__ = ("allowed", "limit", "remaining", "reset_seconds", "blocked_by", "cached", "window_seconds")

    def __init__(self, allowed: bool, limit: int, remaining: int, reset_seconds: int, blocked_by: str = "",
                 cached: bytes | None = None, window_seconds: int = WINDOW_SECONDS) -> None:
        self.allowed = allowed
        self.limit = limit
        self.remaining = remaining
        # Whole seconds until a slot frees: until the oldest counted request leaves the window;
        # for a refusal, until a request would be accepted (for a blocked address, its block's end).
        self.reset_seconds = reset_seconds
        self.blocked_by = blocked_by          # "" | "rate" | "auth"
        self.cached = cached
        self.window_seconds = window_seconds

    @property
    def retry_after(self) -> int:
        """Whole seconds, at least 1, never earlier than the next request that would be accepted."""
        return max(1, self.reset_seconds)

    def __repr__(self) -> str:
        return (f"Admission(allowed={self.allowed}, limit={self.limit}, remaining={self.remaining}, "
                f"reset_seconds={self.reset_seconds}, blocked_by={self.blocked_by!r}, cached={self.cached is not None})")


def _seconds(micros: float) -> int:
    return max(0, math.ceil(micros / _US))


def _admission(limit: int, allowed: int, remaining: int, reset_us: int, blocked_by: bytes | str,
               cached: bytes | None = None) -> Admission:
    """An Admission from admit.lua's answer."""
    return Admission(bool(allowed), limit, int(remaining), _seconds(reset_us),
                     blocked_by.decode() if isinstance(blocked_by, bytes) else blocked_by, cached)


class Gate(Protocol):
    def admit(self, subject: str, limit: int, cache_key: str | None) -> Admission: ...
    def peek(self, subject: str, limit: int) -> Admission: ...
    def record_auth_failure(self, client: str) -> Admission: ...
    def get(self, cache_key: str) -> bytes | None: ...
    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None: ...
    def try_lock(self, cache_key: str, ttl_seconds: int) -> str | None: ...
    def unlock(self, cache_key: str, token: str) -> None: ...
    def status(self) -> dict: ...
    def close(self) -> None: ...


@dataclasses.dataclass(frozen=True)
class GateSettings:
    prefix: str = "signals:"
    window_seconds: int = WINDOW_SECONDS
    auth_failure_limit: int = 20   # failed authentications per client address per window
    process_cache_bytes: int = 64 << 20  # bodies kept in this process's memory (ProcessBodies)


class ProcessBodies:
    """Cached bodies in this process's memory: least recently used first out, the whole bounded by
    `budget` bytes (a body counts its length plus 256 bytes for its key and bookkeeping; one
    larger than a quarter of the budget is not kept), each entry gone when its time is up.

    An entry's key names everything its body depends on (endpoint, canonical request, as_of, data
    generation, code and privacy version), so the body under a key never changes and a new hour
    or a new generation is a new key; the time limit (the Redis entry's, or until the next hour)
    only frees memory. RedisGate keeps what it fetches or stores here, so Redis need not send a
    body again; LocalGate keeps all its bodies here. In a ResilientGate both use one instance,
    so what the worker held while Redis answered is what it serves while Redis is down."""

    OVERHEAD = 256

    def __init__(self, budget: int = GateSettings.process_cache_bytes, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self._largest = budget // 4
        self._clock = clock
        self._size = 0
        self._bodies: collections.OrderedDict[str, tuple[float, bytes]] = collections.OrderedDict()
        self._lock = threading.Lock()  # a lookup reorders entries

    def get(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._bodies.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._bodies[key]
                self._size -= len(entry[1]) + self.OVERHEAD
                return None
            self._bodies.move_to_end(key)
            return entry[1]

    def put(self, key: str, body: bytes, ttl_seconds: float) -> None:
        if len(body) > self._largest or ttl_seconds <= 0:
            return
        with self._lock:
            old = self._bodies.pop(key, None)
            if old is not None:
                self._size -= len(old[1]) + self.OVERHEAD
            self._bodies[key] = (self._clock() + ttl_seconds, body)
            self._size += len(body) + self.OVERHEAD
            while self._size > self.budget:
                _, (_, gone) = self._bodies.popitem(last=False)
                self._size -= len(gone) + self.OVERHEAD

    def clear(self) -> None:
        with self._lock:
            self._bodies.clear()
            self._size = 0

    @property
    def size(self) -> int:
        """Bytes counted against the budget."""
        return self._size

    def __len__(self) -> int:
        return len(self._bodies)


_forget_after_fork: weakref.WeakSet[RedisGate] = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [gate._forget_connection() for gate in list(_forget_after_fork)])


class RedisGate:
    """The gate on Redis, over one lean connection per process (cache/wire.py: the request
    path's one call per request costs ~27 µs of client CPU instead of ~75 µs with a
    `redis.Redis` client). Scripts run by SHA and are loaded again when Redis answers NOSCRIPT
    (after a restart or a flush).

    `connection` is a `Wire`, or a function that makes one: it connects on first use, so a
    Redis that is down when the worker starts is a failure of a call (handled by
    ResilientGate), not of the start. A connection is never shared with a forked child.

    `bodies`: where the bodies it fetches or stores are kept in this process (its own
    ProcessBodies when not given; the one its ResilientGate's fallback uses, from `connect`).
    For a key held there the script is not asked for the body.
    """

    def __init__(self, connection: Wire | Callable[[], Wire], settings: GateSettings = GateSettings(),
                 bodies: ProcessBodies | None = None) -> None:
        self._factory = connection if not isinstance(connection, Wire) else (lambda: connection)
        self._settings = settings
        self._connection: Wire | None = None
        self._proven = False            # the connection has answered at least once
        _forget_after_fork.add(self)
        self._lock = threading.Lock()   # one command at a time on the connection (threaded workers)
        self._window_us = settings.window_seconds * _US
        self._prefix = settings.prefix
        self._bodies = bodies if bodies is not None else ProcessBodies(settings.process_cache_bytes)

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

    def admit(self, subject: str, limit: int, cache_key: str | None) -> Admission:
        known = self._bodies.get(cache_key) if cache_key else None
        args = [limit, self._window_us, _members.next()]
        allowed, remaining, reset_us, blocked_by, body, ttl_ms = self._script(
            _ADMIT,
            [
                self._key("rate", subject),
                self._key("body", cache_key) if cache_key and known is None else "",
            ],
            args,
            [*args, "replay"],  # a request already counted by the lost first send is not refused
        )
        if body:
            self._bodies.put(cache_key, body, ttl_ms / 1000)
        return _admission(limit, allowed, remaining, reset_us, blocked_by, (body or known) if allowed else None)

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
        return Admission(allowed=not blocked, limit=limit, remaining=0, reset_seconds=_seconds(reset_us),
                         blocked_by="auth" if blocked else "")

    def get(self, cache_key: str) -> bytes | None:
        body = self._bodies.get(cache_key)
        return body if body is not None else self._command("GET", self._key("body", cache_key))

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        self._command("SET", self._key("body", cache_key), body, "EX", max(1, ttl_seconds))
        self._bodies.put(cache_key, body, max(1, ttl_seconds))

    def try_lock(self, cache_key: str, ttl_seconds: int) -> str | None:
        token, key = uuid.uuid4().hex, self._key("fill", cache_key)
        done = self._command("SET", key, token, "NX", "EX", ttl_seconds,
                             replay=("EVAL", _LOCK_REPLAY, 1, key, token, ttl_seconds))
        return token if done else None

    def unlock(self, cache_key: str, token: str) -> None:
        self._script(_UNLOCK, [self._key("fill", cache_key)], [token])

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


_SWEEP_EVERY = 1024  # failed authentications between two sweeps of a LocalGate's stale windows


class LocalGate:
    """The same gate in this process's memory: exact for one process, per-process with several."""

    def __init__(self, settings: GateSettings = GateSettings(), clock=time.monotonic,
                 bodies: ProcessBodies | None = None) -> None:
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, collections.deque[float]] = {}
        self._bodies = bodies if bodies is not None else ProcessBodies(settings.process_cache_bytes, clock)
        self._fill_locks: dict[str, tuple[float, str]] = {}
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
        return _seconds((window[index] + self._settings.window_seconds - now) * _US)

    def admit(self, subject: str, limit: int, cache_key: str | None) -> Admission:
        now = self._clock()
        with self._lock:
            window = self._trim("rate:" + subject, now, create=True)
            if len(window) >= limit:
                return Admission(False, limit, 0, self._reset(window, now, limit), "rate")
            window.append(now)
            remaining, reset = limit - len(window), self._reset(window, now)
        return Admission(True, limit, remaining, reset, "", self._bodies.get(cache_key) if cache_key else None)

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
                return Admission(False, limit, 0, self._reset(failures, now, limit), "auth")
            failures.append(now)
            return Admission(True, limit, 0, self._reset(failures, now), "")

    def get(self, cache_key: str) -> bytes | None:
        return self._bodies.get(cache_key)

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        self._bodies.put(cache_key, body, max(1, ttl_seconds))

    def try_lock(self, cache_key: str, ttl_seconds: int) -> str | None:
        now = self._clock()
        with self._lock:
            held = self._fill_locks.get(cache_key)
            if held and held[0] > now:
                return None
            token = uuid.uuid4().hex
            self._fill_locks[cache_key] = (now + ttl_seconds, token)
            return token

    def unlock(self, cache_key: str, token: str) -> None:
        with self._lock:
            if self._fill_locks.get(cache_key, (0, ""))[1] == token:
                del self._fill_locks[cache_key]

    def status(self) -> dict:
        return {"backend": "in-process", "ok": True, "shared": False}

    def close(self) -> None:
        with self._lock:
            self._windows.clear()
        self._bodies.clear()


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

    def admit(self, subject: str, limit: int, cache_key: str | None) -> Admission:
        return self._call("admit", subject, limit, cache_key)

    def peek(self, subject: str, limit: int) -> Admission:
        return self._call("peek", subject, limit)

    def record_auth_failure(self, client: str) -> Admission:
        return self._call("record_auth_failure", client)

    def get(self, cache_key: str) -> bytes | None:
        return self._call("get", cache_key)

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        self._call("put", cache_key, body, ttl_seconds)

    def try_lock(self, cache_key: str, ttl_seconds: int) -> str | None:
        return self._call("try_lock", cache_key, ttl_seconds)

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
