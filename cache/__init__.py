"""Response cache and rate limits: Redis when REDIS_URL is set, process memory otherwise.

`connect()` is the one Redis client factory of the project. It knows Redis, not Falcon.
"""

from __future__ import annotations

import redis

from cache.gate import Admission, Gate, GateSettings, LocalGate, RedisGate, ResilientGate

# Short timeouts: a hanging Redis must cost a request a fraction of a second, not a worker.
REDIS_TIMEOUT_SECONDS = 0.25

__all__ = ["Admission", "Gate", "GateSettings", "LocalGate", "RedisGate", "ResilientGate", "connect", "redis_client"]


def redis_client(url: str, *, single_connection: bool = False) -> redis.Redis:
    """A client with short timeouts. `single_connection`: one dedicated connection instead of a
    pool, which saves the pool's per-command checks (two system calls per call); it connects at
    once, so make it when it is needed (see RedisGate)."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
        health_check_interval=30,
        single_connection_client=single_connection,
    )


def connect(redis_url: str | None, prefix: str = "signals:") -> Gate:
    """A ResilientGate over Redis, or a LocalGate (single process only) when no URL is given."""
    settings = GateSettings(prefix=prefix)
    if not redis_url:
        return LocalGate(settings)
    gate = RedisGate(lambda: redis_client(redis_url, single_connection=True), settings)
    return ResilientGate(gate, LocalGate(settings))
