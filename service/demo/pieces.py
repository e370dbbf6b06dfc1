"""How a large demo is cut into pieces: ranges of days sampled together, and slices of whole
days landed one generation each (service/demo/generate.py, "Pieces")."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Sequence

import polars as pl

from service.api import windows
from service.demo.bursts import DEMO_BURSTS
from service.demo.sampling import CHANGES_PER_EVENT
from service.demo.timeline import SECOND_US, Clock, day_weights


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Days [first_day, first_day + days) of the data set, sampled together (`events`
    suppressions, `changes` keyword changes); `bursts` only in the last chunk."""

    first_day: int
    days: int
    events: int
    changes: int
    bursts: bool


def _apportion(total: int, shares: Sequence[float]) -> list[int]:
    """`total` split by `shares` (cumulative rounding: the parts add up to `total` exactly)."""
    whole, running, previous, parts = sum(shares), 0.0, 0, []
    for share in shares:
        running += share
        upto = round(total * running / whole)
        parts.append(upto - previous)
        previous = upto
    parts[-1] += total - previous
    return parts


def chunks(start: dt.datetime, days: int, events: int, piece_events: int) -> list[Chunk]:
    """Consecutive day ranges, each expected to hold at most `piece_events` events (at least one
    day), except the last: it covers at least the longest trending window of a burst (all of it
    when the data set is shorter), so that a burst is sized and placed on its whole window."""
    weights = day_weights(start, days)
    per_day = _apportion(events, weights)
    burst_days = min(days, max(math.ceil(windows.WINDOW_HOURS[b.window] / 24) for b in DEMO_BURSTS))
    ranges: list[tuple[int, int]] = []
    first = 0
    for day in range(days - burst_days):
        if day > first and sum(per_day[first : day + 1]) > piece_events:
            ranges.append((first, day))
            first = day
    if days - burst_days > first:
        ranges.append((first, days - burst_days))
    ranges.append((days - burst_days, days))
    shares = [sum(weights[a:b]) for a, b in ranges]
    counts = _apportion(events, shares)
    changes = _apportion(round(events * CHANGES_PER_EVENT), shares)
    return [
        Chunk(a, b - a, n, c, bursts=(b == days))
        for (a, b), n, c in zip(ranges, counts, changes, strict=True)
    ]


def landing_slices(frame: pl.DataFrame, clock: Clock, piece_events: int) -> list[tuple[int, int]]:
    """Ranges of whole days [a, b) (relative to the clock's start) of the time-sorted index rows
    `frame`, each with at most `piece_events` rows (a single busier day stays whole)."""
    day_us = 86_400 * SECOND_US
    per_day = frame.group_by((pl.col("t") // day_us).alias("day")).len()
    counts = dict(zip(per_day["day"].to_list(), per_day["len"].to_list(), strict=True))
    slices, first, rows = [], 0, 0
    for day in range(clock.days):
        n = counts.get(day, 0)
        if day > first and rows + n > piece_events:
            slices.append((first, day))
            first, rows = day, 0
        rows += n
    slices.append((first, clock.days))
    return slices


def between(rows: pl.DataFrame, low: int, high: int) -> pl.DataFrame:
    """The rows (sorted by t) with low <= t < high."""
    t = rows.get_column("t")
    first, last = t.search_sorted(low, side="left"), t.search_sorted(high, side="left")
    return rows.slice(first, last - first)
