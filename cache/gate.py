"""The gate every authenticated request passes: rate limit, client block, cached body.

`RedisGate` does all three in one Redis round trip (cache/admit.lua) and is shared by every
worker and node. `LocalGate` has the same interface in process memory, for a single process
without Redis. `ResilientGate` uses Redis and falls back to a LocalGate while Redis is down or
hanging, logging the degradation once and recovering by itself.

This package knows Redis, not Falcon: callers pass plain strings and bytes.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import redis

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
class Admission:
    """The gate's answer for one request."""

    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int          # whole seconds until the oldest counted request leaves the window
    blocked_by: str = ""        # "" | "rate" | "auth"
    cached: bytes | None = None
    window_seconds: int = WINDOW_SECONDS

    @property
    def retry_after(self) -> int:
        """Whole seconds, at least 1, never earlier than the next request that would be accepted."""
        return max(1, self.reset_seconds)


def _seconds(micros: float) -> int:
    return max(0, math.ceil(micros / _US))


class Gate(Protocol):
    def admit(self, subject: str, limit: int, cache_key: str | None, client: str | None = None) -> Admission: ...
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


class RedisGate:
    """The gate on Redis. `client` is a client, or a function that makes one: then the client is
    made on first use, so that a Redis that is down when the worker starts is a failure of a
    call (handled by ResilientGate), not of the start."""

    def __init__(self, client: redis.Redis | Callable[[], redis.Redis], settings: GateSettings = GateSettings()) -> None:
        self._factory = client if callable(client) and not isinstance(client, redis.Redis) else (lambda: client)
        self._settings = settings
        self._client: redis.Redis | None = None
        self._lock = threading.Lock()

    def _ready(self) -> redis.Redis:
        """The client, with its scripts registered; made on first use."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    client = self._factory()
                    self._admit = client.register_script((_SCRIPTS / "admit.lua").read_text())
                    self._fail = client.register_script((_SCRIPTS / "fail.lua").read_text())
                    self._unlock = client.register_script(
                        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
                    )
                    self._client = client
        return self._client

    def _key(self, kind: str, name: str) -> str:
        return f"{self._settings.prefix}{kind}:{name}"

    def admit(self, subject: str, limit: int, cache_key: str | None, client: str | None = None) -> Admission:
        window = self._settings.window_seconds * _US
        self._ready()
        allowed, remaining, reset_us, blocked_by, body = self._admit(
            keys=[
                self._key("rate", subject),
                self._key("authfail", client) if client else "",
                self._key("body", cache_key) if cache_key else "",
            ],
            args=[limit, window, _members.next(), self._settings.auth_failure_limit],
        )
        return Admission(
            allowed=bool(allowed), limit=limit, remaining=int(remaining), reset_seconds=_seconds(reset_us),
            blocked_by=blocked_by.decode() if isinstance(blocked_by, bytes) else blocked_by,
            cached=body or None,
        )

    def record_auth_failure(self, client: str) -> Admission:
        limit = self._settings.auth_failure_limit
        self._ready()
        blocked, reset_us = self._fail(
            keys=[self._key("authfail", client)],
            args=[limit, self._settings.window_seconds * _US, _members.next()],
        )
        return Admission(allowed=not blocked, limit=limit, remaining=0, reset_seconds=_seconds(reset_us),
                         blocked_by="auth" if blocked else "")

    def get(self, cache_key: str) -> bytes | None:
        return self._ready().get(self._key("body", cache_key))

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        self._ready().set(self._key("body", cache_key), body, ex=max(1, ttl_seconds))

    def try_lock(self, cache_key: str, ttl_seconds: int) -> str | None:
        token = uuid.uuid4().hex
        return token if self._ready().set(self._key("fill", cache_key), token, nx=True, ex=ttl_seconds) else None

    def unlock(self, cache_key: str, token: str) -> None:
        self._ready()
        self._unlock(keys=[self._key("fill", cache_key)], args=[token])

    def status(self) -> dict:
        self._ready().ping()
        return {"backend": "redis", "ok": True, "shared": True}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


class LocalGate:
    """The same gate in this process's memory: exact for one process, per-process with several."""

    def __init__(self, settings: GateSettings = GateSettings(), clock=time.monotonic) -> None:
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, collections.deque[float]] = {}
        self._bodies: dict[str, tuple[float, bytes]] = {}
        self._fill_locks: dict[str, tuple[float, str]] = {}

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

    def admit(self, subject: str, limit: int, cache_key: str | None, client: str | None = None) -> Admission:
        now = self._clock()
        with self._lock:
            if client:
                failures = self._trim("authfail:" + client, now)
                most = self._settings.auth_failure_limit
                if len(failures) >= most:
                    return Admission(False, limit, 0, self._reset(failures, now, most), "auth")
            window = self._trim("rate:" + subject, now, create=True)
            if len(window) >= limit:
                return Admission(False, limit, 0, self._reset(window, now, limit), "rate")
            window.append(now)
            cached = self._get_locked(cache_key, now) if cache_key else None
            return Admission(True, limit, limit - len(window), self._reset(window, now), "", cached)

    def record_auth_failure(self, client: str) -> Admission:
        now = self._clock()
        limit = self._settings.auth_failure_limit
        with self._lock:
            failures = self._trim("authfail:" + client, now, create=True)
            failures.append(now)
            blocked = len(failures) > limit
            reset = self._reset(failures, now, limit if blocked else None)
            return Admission(not blocked, limit, 0, reset, "auth" if blocked else "")

    def _get_locked(self, cache_key: str, now: float) -> bytes | None:
        entry = self._bodies.get(cache_key)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._bodies[cache_key]
            return None
        return entry[1]

    def get(self, cache_key: str) -> bytes | None:
        with self._lock:
            return self._get_locked(cache_key, self._clock())

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        now = self._clock()
        with self._lock:
            if len(self._bodies) > 10_000:  # bound memory: drop expired entries, then the oldest
                for key in [k for k, (expiry, _) in self._bodies.items() if expiry <= now] or list(self._bodies)[:1000]:
                    self._bodies.pop(key, None)
            self._bodies[cache_key] = (now + max(1, ttl_seconds), body)

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
            self._bodies.clear()
            self._windows.clear()


class ResilientGate:
    """Redis first; while Redis fails, the local gate answers, and Redis is retried at most once
    per `retry_seconds` so a hanging Redis costs one timeout per interval, not one per request."""

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
                    log.warning("Redis unavailable (%s): serving uncached with per-process rate limits until it returns",
                                type(exc).__name__)
                self._next_try = self._clock() + self._retry_seconds
            return getattr(self._fallback, method)(*args)
        if self._down_since is not None:
            with self._state_lock:
                if self._down_since is not None:
                    log.warning("Redis is back after %.0f s: shared rate limits and cache restored",
                                self._clock() - self._down_since)
                    self._down_since = None
        return result

    def admit(self, subject: str, limit: int, cache_key: str | None, client: str | None = None) -> Admission:
        admission = self._call("admit", subject, limit, cache_key, client)
        # While degraded, the local gate's cache would be served as if shared; keep it uncached.
        return dataclasses.replace(admission, cached=None) if self.degraded else admission

    def record_auth_failure(self, client: str) -> Admission:
        return self._call("record_auth_failure", client)

    def get(self, cache_key: str) -> bytes | None:
        return None if self.degraded else self._call("get", cache_key)

    def put(self, cache_key: str, body: bytes, ttl_seconds: int) -> None:
        if not self.degraded:
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
                    "detail": "Redis unavailable: uncached, per-process rate limits"}
        return {"backend": "redis", "ok": True, "shared": True, "degraded": False}

    def close(self) -> None:
        self._primary.close()
