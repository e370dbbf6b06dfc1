"""What an answer for a past `as_of` depends on, so that it can be cached for as long
as it stays true: until data for the dates it covers change, not just until the next hour."""

from __future__ import annotations

import datetime as dt
from typing import Any

from service.api.periods import window_delta
from service.engine.interface import Snapshot
from service.privacy import data_version

# How long an answer for a past as_of is kept. Its key names the data version of the dates it
# covers (cache_entry.cache_key), so it is never stale; the time only bounds what is kept.
PAST_AS_OF_SECONDS = 24 * 3600


def first_event(frames: Snapshot) -> dt.datetime | None:
    """The first event over both tables (None without data): where the earliest window may start.
    Every engine's snapshot knows it (`Snapshot.first_event`)."""
    return frames.first_event


def covered_start(request: Any, as_of: dt.datetime) -> dt.datetime:
    """The start of the time an answer reads: its window, and the period before it with compare."""
    periods = 2 if getattr(request, "compare", None) else 1
    return as_of - periods * window_delta(request.window)


def past_data_version(frames: Snapshot, start: dt.datetime, end: dt.datetime) -> int:
    """The last generation that changed any date of [start, end), over both tables."""
    return max((data_version(versions, start, end) for versions in frames.versions.values()), default=0)
