"""From released sums to published numbers: user and keyword counts from the distinct measures,
the small-cell rule, rounding. All post-processing of the release.

- **Distinct counts.** A cell's `user_days` over a window counts a user once a day; its users are
  `user_days / f`, with f the table's repeat factor for a window of that many days (rounded up): 1
  for a day or less, the released ratio of the 7-, 30- and 90-day blocks (`repeat.py`) at 7, 30 and 90
  days, log-linear between them (the latest block of each length released by `as_of`). A place's
  `keyword_count` is its `keyword_days / f` alike.
- **Small cells.** A cell is published when its `user_days` estimate is at least `z` noise s.d.
  (`show_z`: z makes the expected number of empty cells of the table that noise alone shows in an
  answer one in ten; at least 2) and rounds to at least one user, as a whole row; otherwise it is
  left out of rankings and shows 0 in a series.
- **Numbers.** Every published number is a whole number, at least 0, and a row's numbers agree as
  real users' can: users <= events <= suppressions. The user count, which passed the small-cell
  rule, is the surest of a shown row's numbers, so a count that noise put below it is raised to it.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from statistics import NormalDist

import polars as pl

from service.release import domains
from service.release.menu import Table
from service.release.repeat import BLOCK_DAYS
from service.release.windows import VAR, Release

STD = "_std"


@functools.cache
def show_z(table: Table) -> float:
    """The s.d. a cell's user-days must reach to be shown (see the module docstring)."""
    size = max(2, len(domains.domain(table)))
    return max(2.0, NormalDist().inv_cdf(1 - 0.1 / size))


def window_days(start: dt.datetime, end: dt.datetime) -> int:
    """The window's length in days, rounded up (the repeat factor's argument): a 24-hour window is
    one day wherever it starts. Measured against the UTC days it touches (2 for most 24-hour
    windows), this halves the users' bias on sliding windows (docs/benchmarks.md "Privacy by
    release": platforms over 24 hours -23 % -> -2 %, keywords -10 % -> -5 %)."""
    return max(1, math.ceil((end - start) / dt.timedelta(days=1)))


def repeat_factor(release: Release, table: Table, measure: str, days: int, as_of: dt.datetime) -> float:
    """How many `measure`-days one unit makes in a window touching `days` UTC days (>= 1)."""
    if days <= 1:
        return 1.0
    scalars = release.scalars
    points = [(1, 1.0)]
    if scalars.height:
        mine = scalars.filter((pl.col("table") == table.name) & (pl.col("measure") == measure)
                              & (pl.col("start") + pl.duration(days=pl.col("days")) <= as_of))
        for length in BLOCK_DAYS:
            latest = mine.filter(pl.col("days") == length).sort("start").tail(1)
            if latest.height:
                numerator, denominator = latest.get_column("numerator")[0], latest.get_column("denominator")[0]
                if denominator > 0 and numerator >= denominator:
                    points.append((length, numerator / denominator))
    if days <= points[0][0] or len(points) == 1:
        return 1.0 if len(points) == 1 else points[0][1]
    for (d0, f0), (d1, f1) in zip(points, points[1:], strict=False):
        if days <= d1:
            t = math.log(days / d0) / math.log(d1 / d0)
            return f0 + t * (f1 - f0)
    return points[-1][1]


def distinct(frame: pl.DataFrame, measure: str, factor: float, name: str) -> pl.DataFrame:
    """`frame[measure] / factor` as `name`, with its s.d. (`name_std`)."""
    return frame.with_columns((pl.col(measure) / factor).alias(name),
                              (pl.col(measure + VAR).sqrt() / factor).alias(name + STD))


def shown(frame: pl.DataFrame, table: Table, user_days: str = "user_days") -> pl.Expr:
    """Whether a row is published: its user-days reach `show_z` s.d. of their noise."""
    del frame
    return pl.col(user_days) >= show_z(table) * pl.col(user_days + VAR).sqrt()


def whole(column: str) -> pl.Expr:
    """A published count: rounded, at least 0."""
    return pl.col(column).round(0).clip(lower_bound=0).cast(pl.Int64)
