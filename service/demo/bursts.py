"""The injected bursts (`DEMO_BURSTS`, the same for every seed) and how their extra events are
sized and placed (`with_bursts`).

Keywords, domains, a platform and a page context whose rate jumps several-fold in the last 6
hours, 24 hours or 7 days before `end`, so every trending window (24h: 6h vs 6-24h; 7d: 24h vs
1-7d; 30d: 7d vs 7-30d) finds clear growth: the burst's rate in the recent period is `factor` times
its rate in that window's baseline. Burst keywords hold fixed ranks of the keyword popularity
(`BURST_KEYWORD_RANKS`), so their baseline is the same for every seed. Burst events are extra
events on top of the baseline: they take nothing away from other values (they do carry keywords,
domains, ... of their own, drawn like any event's). To keep the row count at `events`, the
baseline is sampled for `events` rows, the burst volume B is computed from it, and the first
`events - B` baseline rows are kept (the rows are independent draws, so this thins every value and
period alike). Keyword bursts also show as extra "add" changes.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping, Sequence

import polars as pl

from service.api import windows
from service.demo.draws import Random
from service.demo.timeline import EPOCH, SECOND_US, Clock

# Burst events are placed like their period's other events, up to this far from one of them.
BURST_JITTER_US = 30 * 60 * SECOND_US

# Rows a burst value gets at least in its baseline period, so its growth is defined in small data
# sets (at most one per 1,000 rows of the table). Kept small: the extra baseline rows lie in the
# recent period of longer windows, where they would look like growth.
MIN_BURST_BASELINE = 10


@dataclasses.dataclass(frozen=True)
class Burst:
    """A value whose rate in a trending window's recent period is `factor` times its baseline rate."""

    dimension: str  # keyword | domain | platform | page_context
    value: str
    window: str  # trending window: 24h (recent = last 6 h), 7d (last 24 h), 30d (last 7 days)
    factor: float

    @property
    def hours(self) -> int:
        """The burst covers [end - hours, end): the recent period of its trending window."""
        return round(windows.trending_periods(self.window, EPOCH).recent.hours)

    def describe(self) -> str:
        recent = windows.trending_periods(self.window, EPOCH).recent_label
        return f"{self.dimension} {self.value!r} x{self.factor:g} in the {recent} (trending window {self.window})"


# The injected bursts, the same for every seed (docs/data.md lists them). Per trending window, the
# recent period they fill: 24h -> the last 6 hours, 7d -> the last 24 hours, 30d -> the last 7 days.
DEMO_BURSTS: tuple[Burst, ...] = (
    Burst("keyword", "megan thee stallion", "24h", 10.0),
    Burst("keyword", "hillary clinton", "24h", 8.0),
    Burst("keyword", "momfluencer", "7d", 8.0),
    Burst("keyword", "girl dinner", "7d", 6.0),
    Burst("keyword", "climate change", "30d", 5.0),
    Burst("keyword", "menopause", "30d", 4.0),
    Burst("domain", "tumblr.com", "24h", 8.0),
    Burst("domain", "espn.com", "7d", 5.0),
    Burst("domain", "foxnews.com", "30d", 4.0),
    Burst("platform", "edge", "7d", 3.0),
    Burst("page_context", "profile", "30d", 2.5),
)

# Popularity rank (1 = the most suppressed keyword) of each burst keyword in every seed's Zipf
# ranking (the other keywords are shuffled per seed): popular enough that the baseline is well
# above noise, not so popular that the burst's extra events swamp everything else.
BURST_KEYWORD_RANKS: Mapping[str, int] = types.MappingProxyType(
    {
        "megan thee stallion": 8,
        "hillary clinton": 11,
        "momfluencer": 20,
        "girl dinner": 28,
        "climate change": 12,
        "menopause": 18,
    }
)


def _periods(burst: Burst, clock: Clock) -> tuple[int, int]:
    """(baseline start, recent start) of the burst's trending window, in microseconds after the
    clock's start, both clipped to the data set (the recent period runs to its end)."""
    hour = 3600 * SECOND_US
    recent_start = max(0, clock.span_us - burst.hours * hour)
    return max(0, clock.span_us - windows.WINDOW_HOURS[burst.window] * hour), recent_start


def _value_counts(rows: pl.DataFrame, dimension: str, index: int, periods: tuple[int, int]) -> tuple[int, int]:
    """Rows of the value in the baseline period and in the recent period."""
    if rows.height == 0:
        return 0, 0
    t, is_value = rows["t"], rows[dimension] == index
    baseline_start, recent_start = periods
    # A Boolean Series sums to an int (the stubs say any number).
    return int((is_value & (t >= baseline_start) & (t < recent_start)).sum()), int((is_value & (t >= recent_start)).sum())


def _needed(
    burst: Burst, clock: Clock, periods: tuple[int, int], counts: tuple[int, int], min_baseline: int
) -> tuple[int, int]:
    """(extra rows in the baseline period, extra rows in the recent period) for the burst.

    The recent period gets enough rows for the value's rate there to be `factor` times its rate in
    the baseline period, so trending measures about 100 * (factor - 1) % growth whatever the daily
    cycle does in either period. A value with fewer than `min_baseline` rows in the baseline
    period (small data sets) first gets that many there, so its growth is defined; without a
    baseline period (a data set no longer than the recent period) the recent rate is multiplied.
    """
    hour = 3600 * SECOND_US
    (baseline_start, recent_start), (in_baseline, in_recent) = periods, counts
    recent_hours = (clock.span_us - recent_start) / hour
    if recent_start > baseline_start:
        missing = max(0, min_baseline - in_baseline)
        rate = (in_baseline + missing) / ((recent_start - baseline_start) / hour)
    else:
        missing, rate = 0, in_recent / recent_hours
    return missing, max(0, round(burst.factor * rate * recent_hours - in_recent))


def with_bursts(
    rnd: Random,
    rows: pl.DataFrame,
    clock: Clock,
    bursts: Sequence[tuple[str, int, Burst]],
    make_rows: Callable[[int, tuple[pl.Series, pl.Series]], pl.DataFrame],
    also: Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """`rows.height` rows: baseline rows, and each burst's extra events on top of them.

    Each extra event is an ordinary event (`make_rows`: its own keyword, domain, ...) with the
    burst's value in its dimension (and the values in `also`), at the user and time of a random
    baseline event of its period moved by up to BURST_JITTER_US, so burst events follow the
    daily cycle and the users of their period. Nothing is taken from other values.

    The row count stays n: the extra volume E is first sized on all of `rows` (independent draws),
    and the first n - B baseline rows are kept with B = E * n / (n + E): a uniform thinning, every
    value and period keeps its share. Bursts are then sized one after the other on the kept rows
    plus the extra events so far, longest window first, so each burst's growth counts the extra
    events of the bursts before it (a burst of 'edge' carries keywords too); the baseline keeps
    n - (extra events) rows (or none: a data set of a few rows can end up with more than n).
    """
    n = rows.height
    order = sorted(bursts, key=lambda item: -windows.WINDOW_HOURS[item[2].window])
    periods = [_periods(burst, clock) for _d, _i, burst in order]
    full = [_value_counts(rows, d, i, p) for (d, i, _b), p in zip(order, periods, strict=True)]
    min_baseline = min(MIN_BURST_BASELINE, n // 1000)
    volume = sum(
        sum(_needed(b, clock, p, c, min_baseline)) for (_d, _i, b), p, c in zip(order, periods, full, strict=True)
    )
    kept = n - round(volume * n / (n + volume))
    base, dropped = rows.head(kept), rows.slice(kept)
    frames: list[pl.DataFrame] = []
    for (dimension, index, burst), window_periods, (full_baseline, full_recent) in zip(
        order, periods, full, strict=True
    ):
        gone = _value_counts(dropped, dimension, index, window_periods)
        added = _value_counts(pl.concat(frames) if frames else base.clear(), dimension, index, window_periods)
        counts = (full_baseline - gone[0] + added[0], full_recent - gone[1] + added[1])
        baseline_start, recent_start = window_periods
        needed = _needed(burst, clock, window_periods, counts, min_baseline)
        for start, end, count in ((baseline_start, recent_start, needed[0]), (recent_start, clock.span_us, needed[1])):
            if count > 0:
                frame = _extra_rows(rnd, base, start, end, count, make_rows)
                settings = {dimension: index, **(also or {})}
                frames.append(
                    frame.with_columns(pl.lit(v, dtype=frame[name].dtype).alias(name) for name, v in settings.items())
                )
    extra = sum(frame.height for frame in frames)
    return pl.concat([rows.head(max(0, n - extra)), *frames])


def _extra_rows(
    rnd: Random,
    base: pl.DataFrame,
    start: int,
    end: int,
    count: int,
    make_rows: Callable[[int, tuple[pl.Series, pl.Series]], pl.DataFrame],
) -> pl.DataFrame:
    """`count` events in [start, end), placed at users and times of baseline events there."""
    t = base["t"]
    candidates = ((t >= start) & (t < end)).arg_true()
    if candidates.len():
        picks = candidates.gather((rnd.uniform(count) * candidates.len()).cast(pl.UInt32))
        jitter = ((rnd.uniform(count) * 2.0 - 1.0) * BURST_JITTER_US).cast(pl.Int64)
        times = (t.gather(picks) + jitter).clip(start, end - 1)
        users = base["user"].gather(picks)
    else:  # no baseline event in the period (a tiny data set): the first users, any time in it
        times = (start + rnd.uniform(count) * (end - start)).cast(pl.Int64)
        users = pl.int_range(count, eager=True).cast(base["user"].dtype) % max(1, base["user"].max() or 0)
    return make_rows(count, (users, times))
