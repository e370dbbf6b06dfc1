"""The only place that reads the wall clock. Tests pass a FixedClock instead."""

from __future__ import annotations

import datetime as dt
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime: ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)


class FixedClock:
    """A clock that stands still (or moves only when told), for tests and benchmarks."""

    def __init__(self, at: dt.datetime) -> None:
        if at.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._at = at.astimezone(dt.UTC)

    def now(self) -> dt.datetime:
        return self._at

    def advance(self, delta: dt.timedelta) -> None:
        self._at += delta
