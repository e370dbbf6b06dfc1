"""Response cache and rate limits: Redis when REDIS_URL is set, process memory otherwise.

`connect()` is the one Redis client factory of the project. It knows Redis, not Falcon.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cache.bodies import ProcessBodies
from cache.gate import Admission, Gate, GateSettings, Spend
from cache.local_gate import LocalGate

if TYPE_CHECKING:
    from cache.redis_gate import RedisGate
    from cache.resilient_gate import ResilientGate
    from cache.wire import ReplyWait, Wire

# The Redis side is imported when first named (PEP 562): redis-py takes a fifth of a second to
# import, which processes that only read settings (`python -m service data ingest`) never need.
_REDIS_SIDE = {"RedisGate": "cache.redis_gate", "ResilientGate": "cache.resilient_gate",
               "ReplyWait": "cache.wire", "Wire": "cache.wire"}


def __getattr__(name: str) -> Any:
    module = _REDIS_SIDE.get(name)
    if module is None:
        raise AttributeError(f"module 'cache' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

# Short timeouts: a hanging Redis must cost a request a fraction of a second, not a worker.
REDIS_TIMEOUT_SECONDS = 0.25
# How long a worker polls for Redis's answer before sleeping on the socket (cache.wire.ReplyWait).
# Off by default: polling pays only when a core is free while a worker waits (no more workers
# than cores); with more workers than cores it costs throughput (docs/benchmarks.md, "How many
# workers, and polling"). SIGNALS_REDIS_SPIN_MICROSECONDS turns it on.
REDIS_SPIN_SECONDS = 0.0

__all__ = ["Admission", "Gate", "GateSettings", "Spend", "LocalGate", "ProcessBodies", "RedisGate", "ReplyWait", "ResilientGate",
           "Wire", "connect", "redis_connection"]


def redis_connection(url: str, spin_seconds: float = REDIS_SPIN_SECONDS) -> Wire:
    """One connection to the Redis at `url` (redis://, rediss://, unix://; user, password and
    database from the URL), with short timeouts. It connects when first used."""
    from cache.wire import Wire

    return Wire(url, REDIS_TIMEOUT_SECONDS, spin_seconds)


def connect(redis_url: str | None, prefix: str = "signals:", spin_seconds: float = REDIS_SPIN_SECONDS,
            process_cache_bytes: int = GateSettings.process_cache_bytes) -> Gate:
    """A ResilientGate over Redis, or a LocalGate (single process only) when no URL is given.
    `process_cache_bytes` bounds the bodies kept in this process: with Redis, one store shared by
    the Redis gate and its fallback, so the bodies the worker holds are served while Redis is down."""
    settings = GateSettings(prefix=prefix, process_cache_bytes=process_cache_bytes)
    if not redis_url:
        return LocalGate(settings)
    from cache.redis_gate import RedisGate
    from cache.resilient_gate import ResilientGate

    bodies = ProcessBodies(process_cache_bytes)
    gate = RedisGate(lambda: redis_connection(redis_url, spin_seconds), settings, bodies)
    return ResilientGate(gate, LocalGate(settings, bodies=bodies))
