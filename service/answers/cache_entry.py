"""What an entry of the response cache (the `cache` package) is, and how it is keyed.

A key is the endpoint plus the *validated, canonical* request (so `?a=1&b=2`, `?b=2&a=1` and
`?window=24h` vs no window at all share one entry), the `as_of` and the data generation: a new
hour or a new ingest makes new keys, and old entries simply expire. Entries are shared by every
subscriber (the answer does not depend on who asks)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from typing import Any


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """A response as the cache stores it: its entity tag, content type, file name and body, and
    the number of rows the full answer holds (Signals-Total-Rows; the body may be a page of it)."""

    etag: str
    content_type: str
    filename: str | None
    body: bytes
    rows: int | None = None  # None: stored by a version that did not count them
    # What the answer costs the people in it (micro-epsilon, service/privacy/charges.py), and
    # whether the shared ledger paid it for everyone (precomputed: service/privacy/budget.py).
    charge: int = 0
    shared: bool = False

    def encode(self) -> bytes:
        head = json.dumps({"etag": self.etag, "type": self.content_type, "file": self.filename,
                           "rows": self.rows, "charge": self.charge, "shared": self.shared}).encode()
        return head + b"\n" + self.body

    @classmethod
    def decode(cls, raw: bytes) -> CacheEntry:
        head, _, body = raw.partition(b"\n")
        meta = json.loads(head)
        return cls(etag=meta["etag"], content_type=meta["type"], filename=meta["file"], body=body,
                   rows=meta.get("rows"), charge=meta.get("charge", 0), shared=meta.get("shared", False))


def cache_key(endpoint: str, request: Any, as_of: dt.datetime, generation: int, variant: str = "",
              data_version: int | None = None) -> str:
    """`variant` names everything else an answer depends on (code version, privacy secret and
    parameters): after a change of any of them, old bodies are never served again. A past
    `as_of` gives its `data_version` instead of the generation: the last generation
    that changed a date its answer covers, so its entry outlives ingests that do not touch them."""
    data = generation if data_version is None else f"d{data_version}"
    canonical = json.dumps(
        {"e": endpoint, "r": dataclasses.asdict(request), "a": as_of.isoformat(), "g": data, "v": variant},
        sort_keys=True, separators=(",", ":"), default=list,
    )
    return f"{endpoint}:{hashlib.sha256(canonical.encode()).hexdigest()[:40]}"


def request_identity(endpoint: str, request: Any, variant: str = "") -> str:
    """What stays the same of a request from hour to hour and generation to generation: the
    endpoint, the canonical request and the variant. It names the request among those asked
    recently (what precompute computes first) and its last answer (served stale while the
    current one computes)."""
    canonical = json.dumps({"e": endpoint, "r": dataclasses.asdict(request), "v": variant},
                           sort_keys=True, separators=(",", ":"), default=list)
    return f"{endpoint}:{hashlib.sha256(canonical.encode()).hexdigest()[:40]}"


def seconds_until_next_hour(now: dt.datetime) -> int:
    """Time an answer stays valid: whole seconds until the next hour, when as_of may move on
    (at least 1). Called on every request, so plain arithmetic on the UTC time."""
    now = now.astimezone(dt.UTC)
    return max(1, 3600 - now.minute * 60 - now.second - (1 if now.microsecond else 0))
