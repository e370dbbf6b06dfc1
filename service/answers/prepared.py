"""A request made ready to be answered (`PreparedRequest`): what the resource's `prepare` found
(validation, as_of, the cache key and names), and what serving (serving.py) needs of it."""

from __future__ import annotations

import dataclasses
import datetime as dt

from service.engine.requests import Request
from service.http.errors import Problem


@dataclasses.dataclass(frozen=True)
class PreparedRequest:
    """A request made ready: either a problem to report, or what to answer, its cache key and
    the response headers that follow from it."""

    problem: Problem | None = None
    request: Request | None = None
    generation: int = 0   # of the snapshot the request was prepared for (it never holds the snapshot)
    as_of: dt.datetime | None = None    # the answer's as_of: the current one, or the requested earlier hour
    current: dt.datetime | None = None  # the current as_of the request was prepared under (what a memoised one is checked by)
    key: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    ttl: int | None = None  # seconds to keep the computed body; None: until the next hour
    # The request apart from its hour and data (None for an earlier as_of, or with caching off):
    # counted among the requests asked recently, and the name of its last answer (served stale).
    identity: str | None = None
    stale_ok: bool = False  # no as_of was asked for: the previous answer may be served stale meanwhile
    answer: str | None = None  # what the answer is for the privacy budget (privacy/budget.answer_name)
