"""The time hierarchy a table is released over: continual counting over hourly leaves.

Four levels partition time into aligned nodes: the hour, the quarter of a UTC day (00, 06, 12, 18),
the UTC day and the ISO week (Monday 00:00). A node is released once, when it closes. Any window
of whole hours is the disjoint union of a few nodes (`cover`: the largest node that starts where
the rest of the window starts and fits in it, again and again), so a sum over any window ending at
any hour is a sum of released values: a 30-day window about 20 nodes, a 24-hour one about 8, an
hour one node. One user-day is in one node of each level (four nodes in all), however many windows,
refreshes or subscribers ask for it: that is what makes the bound per user-day independent of use.

Why these levels and not a binary tree over hours: the windows asked for end at any hour but are
1 hour to 90 days long, and a window's edges (the hours of its first and last day) dominate its
noise. A tree of 12 dyadic levels puts a user-day in 12 nodes; these four cover a 30-day window in
about as many nodes with a third of the levels (docs/privacy.md "The schedule" has the variances).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator, Mapping

HOUR = dt.timedelta(hours=1)


def _hour(t: dt.datetime) -> dt.datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def _quarter(t: dt.datetime) -> dt.datetime:
    return t.replace(hour=t.hour - t.hour % 6, minute=0, second=0, microsecond=0)


def _day(t: dt.datetime) -> dt.datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def _week(t: dt.datetime) -> dt.datetime:
    return _day(t) - dt.timedelta(days=t.weekday())


@dataclasses.dataclass(frozen=True)
class Level:
    name: str
    length: dt.timedelta
    sub_day: bool
    floor: Callable[[dt.datetime], dt.datetime]

    def start(self, t: dt.datetime) -> dt.datetime:
        """The start of the node of this level that holds `t`."""
        return self.floor(t)

    def is_start(self, t: dt.datetime) -> bool:
        return self.start(t) == t


LEVELS: Mapping[str, Level] = {
    "hour": Level("hour", HOUR, True, _hour),
    "quarter": Level("quarter", 6 * HOUR, True, _quarter),
    "day": Level("day", 24 * HOUR, False, _day),
    "week": Level("week", 168 * HOUR, False, _week),
}
LARGEST_FIRST = tuple(sorted(LEVELS.values(), key=lambda level: -level.length))
SUB_DAY = tuple(name for name, level in LEVELS.items() if level.sub_day)


@dataclasses.dataclass(frozen=True, order=True)
class Node:
    start: dt.datetime
    level: str

    @property
    def end(self) -> dt.datetime:
        return self.start + LEVELS[self.level].length


def cover(start: dt.datetime, end: dt.datetime) -> list[Node]:
    """The nodes whose disjoint union is [start, end) (both whole UTC hours), in time order."""
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("window bounds must be aware (UTC) datetimes")
    if _hour(start) != start or _hour(end) != end:
        raise ValueError("window bounds must be whole hours")
    nodes: list[Node] = []
    t = start
    while t < end:
        for level in LARGEST_FIRST:
            if level.is_start(t) and t + level.length <= end:
                nodes.append(Node(t, level.name))
                t += level.length
                break
    return nodes


def closing_at(t: dt.datetime) -> Iterator[Node]:
    """The nodes that close when time reaches `t` (a whole hour): the hour before it, and the
    quarter, day and week that end there."""
    for level in LEVELS.values():
        start = level.start(t - HOUR)
        if start + level.length == t:
            yield Node(start, level.name)


def nodes_of_day(day: dt.date) -> list[Node]:
    """Every hour and quarter node of one UTC day and its day node (the week's is `closing_at`'s)."""
    midnight = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    hours = [Node(midnight + i * HOUR, "hour") for i in range(24)]
    quarters = [Node(midnight + 6 * i * HOUR, "quarter") for i in range(4)]
    return [*hours, *quarters, Node(midnight, "day")]
