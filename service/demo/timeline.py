"""When demo events happen: a day (slowly growing use, busier weekends) and a local hour from
`HOURLY_PROFILE`, shifted to UTC by the city's longitude (solar time: "local-ish")."""

from __future__ import annotations

import dataclasses
import datetime as dt

import polars as pl

from service.demo.draws import Random

# Relative activity by local hour 0..23: quiet at night, a lunch bump, an evening peak.
HOURLY_PROFILE = (
    0.9, 0.55, 0.35, 0.25, 0.2, 0.25, 0.45, 0.8, 1.1, 1.2, 1.25, 1.3,
    1.45, 1.4, 1.3, 1.3, 1.35, 1.45, 1.6, 1.8, 1.95, 2.0, 1.8, 1.35,
)  # fmt: skip
WEEKEND_FACTOR = 1.15
GROWTH_OVER_PERIOD = 0.3  # the user base grows: the last day is 30 % busier than the first

SECOND_US = 1_000_000  # microseconds per second
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def day_weights(start: dt.datetime, days: int) -> list[float]:
    """Relative volume of each day of the data set: slow growth, busier weekends."""
    weights = []
    for day in range(days):
        weekday = (start + dt.timedelta(days=day)).weekday()
        growth = 1.0 + GROWTH_OVER_PERIOD * day / max(1, days - 1)
        weights.append(growth * (WEEKEND_FACTOR if weekday >= 5 else 1.0))
    return weights


@dataclasses.dataclass(frozen=True)
class Clock:
    """Days [start, start + days): the whole data set, or a piece of it that begins on day
    `first_day` of a data set of `total_days` (its growth is the whole data set's)."""

    start: dt.datetime
    days: int
    first_day: int = 0
    total_days: int | None = None

    @property
    def span_us(self) -> int:
        return self.days * 86_400 * SECOND_US

    @property
    def start_us(self) -> int:
        return (self.start - EPOCH) // dt.timedelta(microseconds=1)

    def sample(self, rnd: Random, offsets_hours: pl.Series) -> pl.Series:
        """Microseconds after `start`: a day, a local hour by profile, shifted to UTC."""
        n = offsets_hours.len()
        total_days = self.total_days or self.days
        origin = self.start - dt.timedelta(days=self.first_day)
        weights = day_weights(origin, total_days)[self.first_day : self.first_day + self.days]
        day = rnd.choice(n, weights).cast(pl.Int64)
        hour = rnd.choice(n, HOURLY_PROFILE).cast(pl.Int64)
        within = (rnd.uniform(n) * 3600 * SECOND_US).cast(pl.Int64)
        local = day * 86_400 * SECOND_US + (hour - offsets_hours.cast(pl.Int64)) * 3600 * SECOND_US + within
        return local % self.span_us  # the wrap keeps every event inside [start, end)
