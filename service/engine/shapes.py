"""What compare and intervals need to know of each endpoint's records: which fields
identify a record, which are its published counts, which of those are capped sums."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from service.engine.requests import GEO_LEVELS


@dataclasses.dataclass(frozen=True)
class RecordShape:
    """An endpoint's records as compare and intervals see them.

    - `keys`: the fields identifying a record (its dimension values), from the request;
    - `measures`: its published counts, in field order;
    - `users`: the field with the record's (noisy) user count;
    - `capped`: the counts that are sums with a per-user cap (field -> the privacy stage's measure,
      whose budget sets the noise): the exact value may lie above them;
    - `derived`: counts computed from others (field -> (part, sign) pairs: net_adds = adds - removes);
    - `chance`: for a count that is a difference, the counts whose sum varies by chance behind it;
    - `widen`: the request for the previous period (every cell, not only the first `limit`).
    """

    keys: Callable[[Any], tuple[str, ...]]
    measures: tuple[str, ...]
    users: str
    capped: Mapping[str, str] = dataclasses.field(default_factory=dict)
    derived: Mapping[str, tuple[tuple[str, int], ...]] = dataclasses.field(default_factory=dict)
    chance: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    widen: Callable[[Any], Any] = lambda req: req


_ALL = 2**31 - 1  # a limit no answer reaches
_SUMS = {"suppressions": "suppressions", "events": "events"}


def _query_keys(req: Any) -> tuple[str, ...]:
    return tuple("ts" if d == "time" else f"{d}_id" if d in GEO_LEVELS else d for d in req.group_by)


def _all(req: Any) -> Any:
    return dataclasses.replace(req, limit=_ALL, offset=0)


_TIMESERIES = RecordShape(lambda req: ("ts",), ("suppressions", "users_est", "events"), "users_est", _SUMS)

SHAPES: dict[str, RecordShape] = {
    "top_keywords": RecordShape(lambda req: ("keyword_raw",), ("suppressions", "users_est"), "users_est",
                                {"suppressions": "suppressions"}, widen=_all),
    "keyword_timeseries": _TIMESERIES,
    "domain_timeseries": _TIMESERIES,
    "geo_heat": RecordShape(lambda req: ("geo_key",), ("suppressions", "unique_users", "keyword_count"),
                            "unique_users", {"suppressions": "suppressions"}),
    "keyword_activity": RecordShape(
        lambda req: ("keyword",), ("adds", "removes", "edits", "total_events", "unique_users", "net_adds"),
        "unique_users", {"adds": "events", "removes": "events", "edits": "events"},
        derived={"total_events": (("adds", 1), ("removes", 1), ("edits", 1)), "net_adds": (("adds", 1), ("removes", -1))},
        chance={"net_adds": ("adds", "removes")},
        widen=lambda req: dataclasses.replace(req, limit=_ALL, offset=0, type="all")),
    "query": RecordShape(_query_keys, ("suppressions", "unique_users", "events"), "unique_users", _SUMS, widen=_all),
}
