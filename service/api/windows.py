"""Time windows, `as_of`, buckets and trending periods (DESIGN "Time").

Every window is the half-open range [as_of - window, as_of). `as_of` is the start of the
current UTC hour, but never later than the end of the last hour that has data, so every
answer stays valid until the next hour or the next ingest.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

UTC = dt.UTC
HOUR = dt.timedelta(hours=1)

WINDOW_HOURS: dict[str, int] = {
    "1h": 1,
    "6h": 6,
    "12h": 12,
    "24h": 24,
    "7d": 7 * 24,
    "30d": 30 * 24,
    "90d": 90 * 24,
}

BUCKETS = ("hour", "day", "week")


@dataclasses.dataclass(frozen=True)
class TimeRange:
    """Half-open UTC range [start, end)."""

    start: dt.datetime
    end: dt.datetime

    @property
    def hours(self) -> float:
        return (self.end - self.start) / HOUR


def floor_hour(moment: dt.datetime) -> dt.datetime:
    moment = moment.astimezone(UTC)
    return moment.replace(minute=0, second=0, microsecond=0)


def hour_end(moment: dt.datetime) -> dt.datetime:
    """The end of `moment`'s UTC hour: the first `as_of` whose windows can count an event at
    `moment` (answers cover whole hours only)."""
    return floor_hour(moment) + HOUR


def compute_as_of(now: dt.datetime, last_event: dt.datetime | None) -> dt.datetime:
    """Start of the current hour, but no later than the end of the last hour with data."""
    current = floor_hour(now)
    if last_event is None:
        return current
    return min(current, hour_end(last_event))


def window_range(window: str, as_of: dt.datetime) -> TimeRange:
    return TimeRange(as_of - dt.timedelta(hours=WINDOW_HOURS[window]), as_of)


def bucket_start(moment: dt.datetime, bucket: str) -> dt.datetime:
    """Start of the bucket that holds `moment`: the hour, UTC midnight, or ISO-week Monday."""
    hour = floor_hour(moment)
    if bucket == "hour":
        return hour
    day = hour.replace(hour=0)
    if bucket == "day":
        return day
    if bucket == "week":
        return day - dt.timedelta(days=day.weekday())
    raise ValueError(f"unknown bucket {bucket!r}")


def bucket_step(bucket: str) -> dt.timedelta:
    return {"hour": HOUR, "day": dt.timedelta(days=1), "week": dt.timedelta(weeks=1)}[bucket]


def bucket_starts(time_range: TimeRange, bucket: str) -> list[dt.datetime]:
    """Every bucket that overlaps the range, oldest first."""
    step = bucket_step(bucket)
    current = bucket_start(time_range.start, bucket)
    starts = []
    while current < time_range.end:
        starts.append(current)
        current += step
    return starts


def polars_every(bucket: str) -> str:
    """The polars duration string that truncates timestamps to this bucket."""
    return {"hour": "1h", "day": "1d", "week": "1w"}[bucket]


@dataclasses.dataclass(frozen=True)
class TrendingPeriods:
    recent: TimeRange
    baseline: TimeRange
    recent_label: str
    baseline_label: str


# window -> (recent hours, human label of recent, human label of baseline)
_TRENDING = {
    "24h": (6, "last 6 hours", "6 to 24 hours ago"),
    "7d": (24, "last 24 hours", "1 to 7 days ago"),
    "30d": (7 * 24, "last 7 days", "7 to 30 days ago"),
}
TRENDING_WINDOWS = tuple(_TRENDING)


def trending_periods(window: str, as_of: dt.datetime) -> TrendingPeriods:
    recent_hours, recent_label, baseline_label = _TRENDING[window]
    split = as_of - dt.timedelta(hours=recent_hours)
    whole = window_range(window, as_of)
    return TrendingPeriods(
        recent=TimeRange(split, as_of),
        baseline=TimeRange(whole.start, split),
        recent_label=recent_label,
        baseline_label=baseline_label,
    )


def iso_z(moment: dt.datetime) -> str:
    """ISO 8601 UTC with a trailing Z, second precision."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
