"""Moving a window in time: a requested `as_of`, its accepted range, and the period
before a window.

Every window is [as_of - window, as_of) (service/api/windows.py). A request may name an earlier
`as_of`: an ISO 8601 UTC hour no later than the current `as_of` and no earlier than the data's
first hour plus the window (an earlier window would reach before the data and look like a fall).
The previous period of a window is the window of the same length ending where it starts, so the
same request with `as_of` moved back by one window: `previous_as_of`. This module is the one
place that says so.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from service.api.windows import UTC, WINDOW_HOURS, bucket_start, floor_hour, iso_z

# 2026-11-20T13:00:00Z; the seconds may be left out and the zone may be written +00:00 (UTC, as
# ISO 8601 allows). Anything else (a date alone, a local time, another offset) is refused.
_ISO_HOUR = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,9}))?)?"
    r"(?P<zone>Z|z|[+-]\d{2}:?\d{2})$"
)


@dataclasses.dataclass(frozen=True)
class AsOfRange:
    """The hours a window of one length may end at: from `earliest` to `latest` (the current
    as_of), both included."""

    earliest: dt.datetime
    latest: dt.datetime

    def describe(self) -> str:
        if self.earliest == self.latest:
            return f"only {iso_z(self.latest)} (the current as_of) for this window"
        return f"a whole UTC hour from {iso_z(self.earliest)} to {iso_z(self.latest)} (the current as_of)"


def window_delta(window: str) -> dt.timedelta:
    return dt.timedelta(hours=WINDOW_HOURS[window])


def as_of_range(window: str, current: dt.datetime, first_event: dt.datetime | None) -> AsOfRange:
    """The accepted `as_of` values of a window: its start may not be before the data's first hour.
    The current as_of is always accepted (it is what a request without as_of gets), even when the
    data are shorter than the window."""
    if first_event is None:
        return AsOfRange(current, current)
    return AsOfRange(min(floor_hour(first_event) + window_delta(window), current), current)


class AsOfError(ValueError):
    """A requested as_of that is not accepted; the message is the reason, accepted range included."""


def parse_as_of(text: str, accepted: AsOfRange) -> dt.datetime:
    """The requested `as_of` as a UTC datetime, or AsOfError saying why not and what is accepted."""
    expected = f"expected {accepted.describe()}, written like {iso_z(accepted.latest)}"
    match = _ISO_HOUR.match(text.strip())
    if match is None:
        raise AsOfError(f"{text!r} is not an ISO 8601 UTC time; {expected}")
    zone = match["zone"].replace(":", "")
    if zone not in ("Z", "z", "+0000", "-0000"):
        raise AsOfError(f"{text!r} is not in UTC (offset {match['zone']}); {expected}")
    try:
        moment = dt.datetime.fromisoformat(f"{match['date']}T{match['hour']}:{match['minute']}:{match['second'] or '00'}")
    except ValueError:
        raise AsOfError(f"{text!r} is not a valid date and time; {expected}") from None
    moment = moment.replace(tzinfo=UTC)
    if moment.minute or moment.second or (match["fraction"] and int(match["fraction"])):
        raise AsOfError(f"{text!r} does not fall on a whole hour; {expected}")
    if moment > accepted.latest:
        raise AsOfError(f"{iso_z(moment)} is after the current as_of; {expected}")
    if moment < accepted.earliest:
        raise AsOfError(f"{iso_z(moment)} is too early: the window would start before the data's first hour; "
                        f"{expected}")
    return moment


def previous_period_error(window: str, as_of: dt.datetime, first_event: dt.datetime | None) -> str | None:
    """Why the period before the window cannot be compared (it would start before the data's first
    hour, so the same request one window earlier is refused too); None when it can."""
    if first_event is None:
        return None
    start = as_of - 2 * window_delta(window)
    first = floor_hour(first_event)
    if start >= first:
        return None
    earliest = first + 2 * window_delta(window)
    return (f"cannot compare with the previous period: it would start at {iso_z(start)}, before the data's first "
            f"hour {iso_z(first)}; with window {window}, compare needs an as_of from {iso_z(earliest)} "
            f"(or a shorter window)")


def previous_as_of(window: str, as_of: dt.datetime) -> dt.datetime:
    """The end of the previous period: the same length, ending where the window starts."""
    return as_of - window_delta(window)


def previous_bucket(ts: dt.datetime, window: str, as_of: dt.datetime, bucket: str) -> dt.datetime:
    """The bucket one window earlier: the previous period's bucket holding the instant one window
    before the bucket's first instant inside the window. For hour and day buckets (and week
    buckets of a 7d window) that is simply `ts - window`."""
    start = as_of - window_delta(window)
    return bucket_start(max(ts, start) - window_delta(window), bucket)
