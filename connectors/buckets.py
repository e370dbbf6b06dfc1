"""The API's windows and time buckets as lengths of time, and which buckets of a timeseries the
window covers only in part (the first and last `day` or `week` buckets, when as_of is not at a
bucket's edge). Pure: the answer's own as_of (its header) in, nothing computed from the clock."""

from __future__ import annotations

import datetime as dt
import re

_WINDOW = re.compile(r"(\d+)([hd])")
BUCKETS = {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1), "week": dt.timedelta(weeks=1)}


def window_length(window: str) -> dt.timedelta:
    """`24h` -> 24 hours, `7d` -> 7 days (the API's window names)."""
    match = _WINDOW.fullmatch(window)
    if not match:
        raise ValueError(f"window {window!r} is not a number of hours or days")
    return dt.timedelta(hours=int(match[1])) if match[2] == "h" else dt.timedelta(days=int(match[1]))


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


def hours_covered(start: dt.datetime, bucket: str, window: str, as_of: dt.datetime) -> tuple[int, int]:
    """(hours of the bucket starting at `start` that lie in the window ending at `as_of`, the
    bucket's hours): (6, 24) for a day bucket the window reaches 6 hours into."""
    length = BUCKETS[bucket]
    first = as_of - window_length(window)
    inside = min(start + length, as_of) - max(start, first)
    return max(0, int(inside / dt.timedelta(hours=1))), int(length / dt.timedelta(hours=1))


def partial_note(ts: str, bucket: str | None, window: str | None, as_of: dt.datetime | None) -> str | None:
    """"partial: 6 of 24 hours" for a bucket the window covers in part; None for a whole one (or
    when the answer does not say its bucket, window or as_of)."""
    if not (bucket in BUCKETS and window and as_of):
        return None
    try:
        covered, total = hours_covered(parse_time(ts), bucket, window, as_of)
    except ValueError:
        return None
    return f"partial: {covered} of {total} hours" if covered < total else None
