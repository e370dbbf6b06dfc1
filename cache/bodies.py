"""Cached response bodies in this process's memory (`ProcessBodies`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import cachetools

from cache.gate import GateSettings

T = TypeVar("T")


class ProcessBodies:
    """Cached bodies in this process's memory: least recently used first out, the whole bounded by
    `budget` bytes (a body counts its length plus 256 bytes for its key and bookkeeping; one
    larger than a quarter of the budget is not kept), each entry gone when its time is up.

    An entry's key names everything its body depends on (endpoint, canonical request, as_of, data
    generation, code and privacy version), so the body under a key never changes and a new hour
    or a new generation is a new key; the time limit (the Redis entry's, or until the next hour)
    only frees memory. RedisGate keeps what it fetches or stores here, so Redis need not send a
    body again; LocalGate keeps all its bodies here. In a ResilientGate both use one instance,
    so what the worker held while Redis answered is what it serves while Redis is down.

    It is the process's one body cache: a body's decoded form (the service's CacheEntry: its head
    parsed, its body cut out) is kept beside it the first time it is asked for (`decoded`), so a
    hot body is neither fetched nor parsed again; the two count together against the budget."""

    OVERHEAD = 256

    def __init__(self, budget: int = GateSettings.process_cache_bytes, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self._largest = budget // 4
        # cachetools' TLRU: least recently used out first, expired entries before any; each entry
        # weighs its body's length (twice once decoded: the decoded body is a copy) plus OVERHEAD;
        # the value is (when it expires, body, [decoded]). Not thread-safe by itself: a lookup
        # reorders it.
        self._clock = clock
        self._bodies: cachetools.TLRUCache[str, tuple[float, bytes, list[Any]]] = cachetools.TLRUCache(
            maxsize=budget, ttu=lambda _key, value, _now: value[0],
            getsizeof=lambda value: len(value[1]) * (2 if value[2] else 1) + self.OVERHEAD, timer=clock)
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._bodies.get(key)
        return None if entry is None else entry[1]

    def put(self, key: str, body: bytes, ttl_seconds: float) -> None:
        if len(body) > self._largest or ttl_seconds <= 0:
            return
        with self._lock:
            self._bodies[key] = (self._clock() + ttl_seconds, body, [])

    def decoded(self, key: str, body: bytes, decode: Callable[[bytes], T]) -> T:
        """`decode(body)`, kept with the body under `key` when that is the body kept there (so a
        hot body is decoded once); a body not kept (too large, or gone) is decoded each time."""
        with self._lock:
            entry = self._bodies.get(key)
        if entry is not None and entry[1] is body and entry[2]:
            found: T = entry[2][0]
            return found
        value = decode(body)
        if entry is not None and entry[1] is body and len(body) * 2 <= self._largest:
            with self._lock:  # stored again, so that its weight counts the decoded copy
                if self._bodies.get(key) is entry:
                    self._bodies[key] = (entry[0], body, [value])
        return value

    def clear(self) -> None:
        with self._lock:
            self._bodies.clear()

    @property
    def size(self) -> int:
        """Bytes counted against the budget (expired entries included until they are dropped)."""
        return int(self._bodies.currsize)  # sizes are ints (getsizeof); the stub says float

    def __len__(self) -> int:
        return len(self._bodies)
