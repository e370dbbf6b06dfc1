"""What the collector's processes share through Redis when REDIS_URL is set: each ingest key's rate
limit, and the ids of the events they accepted (for the answer's `duplicates`). Without Redis (or
while it is down) each process keeps both for itself (service/collector/app.py `KeyRates`,
`RecentIds`), as before.

- **Rate limits** are the API's own gate (cache/: `cache.connect`, the moving 60-second window of
  cache/admit.lua, one round trip), under the subject `ingest:<key id>`: one window per ingest key
  for every collector process and machine. While Redis fails, the gate's local fallback counts per
  process (`ResilientGate`).
- **Seen ids**: one Redis key per accepted event id, `<SIGNALS_REDIS_PREFIX>collector:seen:<id>`,
  kept an hour (`SEEN_SECONDS`: a client sends again within minutes of a lost answer; keeping them
  for the whole lateness window would take some 21 GB at 1,000 events/s, for a count the lander
  gets right anyway). A post asks
  for its ids in one `EXISTS`-like round trip before it writes its batch (`seen`), and marks them in
  one script after the batch is durable (`mark`): marking after, not claiming before with `SET NX`,
  because a claim whose write then fails (a 503, a killed process) would have the client's retry
  answered as a duplicate of an event that was never kept. Two copies of one event posted at the
  same moment to two processes are therefore both answered as accepted; the lander drops one. The
  event-id index (service/collector/index.py) stays the truth of what landed: Redis only makes the
  answer's count right more often.
"""

from __future__ import annotations

import logging
import threading
import time

import redis

import cache
from cache.gate import Gate

log = logging.getLogger("signals.collector")

SEEN_SECONDS = 3600  # how long an accepted id is answered as a duplicate by every process
RETRY_SECONDS = 2.0  # while Redis fails, it is tried again this often (the per-process ids answer meanwhile)
# Marks every id of a batch: KEYS = the ids' keys, ARGV[1] = seconds to keep them.
_MARK = "for _, key in ipairs(KEYS) do redis.call('SET', key, '1', 'EX', ARGV[1]) end return #KEYS"
_CHUNK = 5000  # ids per command (a body of 50,000 lines takes ten round trips each way)


class SharedRates:
    """Requests per minute per ingest key, shared by every collector process (the API's gate)."""

    def __init__(self, gate: Gate, per_minute: int) -> None:
        self.gate, self.per_minute = gate, per_minute

    def take(self, key_id: int) -> float:
        """0 when the request may go on; else the seconds until it may."""
        admission = self.gate.admit(f"ingest:{key_id}", self.per_minute, None)
        return 0.0 if admission.allowed else float(admission.retry_after)


class SharedIds:
    """The ids accepted by any collector process, in Redis (module docstring). `seen` and `mark`
    raise redis.RedisError (or OSError) when Redis fails; `available` says whether to ask it."""

    def __init__(self, redis_url: str, prefix: str, keep_seconds: int) -> None:
        self.prefix = f"{prefix}collector:seen:"
        self.keep_seconds = keep_seconds
        self._wire = cache.redis_connection(redis_url)
        self._lock = threading.Lock()  # one command at a time on the connection (threaded workers)
        self._down_until = 0.0

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    def failed(self, exc: Exception) -> None:
        if self.available:
            log.warning("Redis unavailable for the collector's shared duplicate check (%s: %s): each process "
                        "answers from its own ids until it returns", type(exc).__name__, exc)
        self._down_until = time.monotonic() + RETRY_SECONDS

    def seen(self, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            with self._lock:
                values = self._wire.call("MGET", *(self.prefix + i for i in chunk))
            found.update(i for i, value in zip(chunk, values, strict=True) if value is not None)
        return found

    def mark(self, ids: list[str]) -> None:
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            with self._lock:
                self._wire.call("EVAL", _MARK, len(chunk), *(self.prefix + i for i in chunk), self.keep_seconds)

    def close(self) -> None:
        with self._lock:
            self._wire.close()


RedisFailure = (redis.RedisError, OSError)
