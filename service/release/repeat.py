"""Repeat factors: how many user-days (or a place's keyword-days) one user (keyword) makes in a
block of days, released as two scalars a block so that distinct counts can be estimated from the
tables' additive `user_days` and `keyword_days` (`estimates.py`).

For every table, every distinct measure and every block of 7 days (the ISO week), 30 and 90 days
(aligned to 1970-01-01), when the block ends the schedule releases, with Gaussian noise:

- `numerator`: the block's (unit, cell) pairs counted once a day (the sum over the table's cells
  of the measure: user-days, keyword-days);
- `denominator`: the block's distinct (unit, cell) pairs (the sum over the cells of distinct users,
  of distinct keywords).

Their ratio is the table's repeat factor for blocks of that length. One user-day adds at most K
pairs to each (K: the table's cells per user-day; a place's keywords per user-day), so each scalar
has sensitivity K; the `Budget.repeat_factors` share is split evenly over the scalars a user-day
is in.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence

import polars as pl

from service.release.menu import BUDGET, KEYWORD_DAYS, KEYWORDS_PER_USER_DAY, TABLES, Budget, Table
from service.release.noise import scalar_draw
from service.release.storage import SCALAR_SCHEMA

BLOCK_DAYS = (7, 30, 90)
_EPOCH = dt.date(1970, 1, 1)


def distinct_measures() -> list[tuple[Table, str]]:
    return [(t, m.name) for t in TABLES for m in t.measures if m.distinct]


def block_end(day: dt.date, days: int) -> bool:
    """Whether a block of `days` ends with `day` (the ISO week: a Sunday)."""
    if days == 7:
        return day.weekday() == 6
    return ((day - _EPOCH).days + 1) % days == 0


def block_first(day: dt.date, days: int) -> dt.date:
    """The first day of the block of `days` that holds `day`."""
    if days == 7:
        return day - dt.timedelta(days=day.weekday())
    return day - dt.timedelta(days=(day - _EPOCH).days % days)


def scalar_sensitivity(table: Table, measure: str) -> float:
    return float(KEYWORDS_PER_USER_DAY if measure == KEYWORD_DAYS else table.cells_per_user_day)


def scalar_sigma(table: Table, measure: str, budget: Budget = BUDGET) -> float:
    scalars = len(distinct_measures()) * len(BLOCK_DAYS) * 2  # the scalars one user-day is in
    return scalar_sensitivity(table, measure) / math.sqrt(budget.repeat_factors / scalars)


def scalar_rows(first: dt.date, days: int, pairs_by_day: Sequence[Mapping[tuple[str, str], pl.DataFrame]],
                key: bytes, budget: Budget = BUDGET) -> pl.DataFrame:
    """The released scalars of the block of `days` starting at `first`."""
    start = dt.datetime(first.year, first.month, first.day, tzinfo=dt.UTC)
    rows = []
    for table, measure in distinct_measures():
        parts = [day[(table.name, measure)] for day in pairs_by_day]
        numerator = sum(p.height for p in parts)
        denominator = pl.concat(parts).unique().height if parts else 0
        s = scalar_sigma(table, measure, budget)
        name = f"{table.name}|{measure}|{days}|{first.isoformat()}"
        rows.append({"table": table.name, "measure": measure, "days": days, "start": start,
                     "numerator": numerator + scalar_draw(key, name + "|numerator", s),
                     "denominator": denominator + scalar_draw(key, name + "|denominator", s),
                     "sigma": s, "sensitivity": scalar_sensitivity(table, measure)})
    return pl.DataFrame(rows, schema=SCALAR_SCHEMA)
