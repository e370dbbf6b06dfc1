"""The privacy accountant: the whole schedule composed into one (epsilon, delta) per user-day and
per user-month, by Google's dp-accounting library (its privacy-loss-distribution accountant: the
tightest composition of Gaussian mechanisms it knows), never by hand.

What is composed. A user-day is in exactly one node of each level of each measure of each table
(`levels.py`), and in one block of each length of each repeat-factor scalar (`repeat.py`). Each
of those is a Gaussian mechanism over the node's vector of cells: noise s.d. sigma, and an L2
sensitivity Delta that the bounds fix (`menu.sensitivity`, `repeat.scalar_sensitivity`), so its
noise multiplier is sigma / Delta. The user-day's loss is the composition of all of them. A
user-month (31 consecutive user-days of one user) changes the nodes of the sub-day levels and the
days disjointly (31 nodes: the multiplier divided by sqrt(31)) but up to seven user-days of a
week node together, and up to 31 of a block: `month_factor` is the largest sum of squares of the
days a 31-day span puts in each node of a level, over every alignment.

The ad-hoc budget of `/query` (issue 50 item 4) is not built yet, so nothing is reserved for it
here and `/query` outside the menu is refused (docs/privacy.md says so).

`statement()` is what `GET /api/v1/privacy` returns; `from_release()` recomputes the same figures
from the noise s.d. stored beside every released node, the release's own log.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
from collections.abc import Iterable, Sequence
from importlib import metadata

import polars as pl

from service.release.levels import LEVELS
from service.release.menu import BUDGET, LEVEL_SHARES, TABLES, Budget, sensitivity, sigma
from service.release.repeat import BLOCK_DAYS, distinct_measures, scalar_sensitivity, scalar_sigma
from service.release.storage import LEVEL, ReleaseStore

MONTH_DAYS = 31
DELTA = 1e-9


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """One Gaussian mechanism a user-day is in: `multiplier` = sigma / (the user-day's L2
    sensitivity); `month_factor` = the squared sensitivity of a user-month over a user-day's."""

    name: str
    multiplier: float
    month_factor: int


@functools.cache
def month_factor(days_per_node: int, span: int = MONTH_DAYS) -> int:
    """max over alignments of sum_n k_n^2, k_n = the days of a `span`-day run in node n of a level
    whose nodes are `days_per_node` days long (1 for the sub-day levels and the day: `span`)."""
    if days_per_node <= 1:
        return span
    best = 0
    for offset in range(days_per_node):
        counts: dict[int, int] = {}
        for day in range(offset, offset + span):
            counts[day // days_per_node] = counts.get(day // days_per_node, 0) + 1
        best = max(best, sum(k * k for k in counts.values()))
    return best


def _level_days(level: str) -> int:
    return max(1, int(LEVELS[level].length / dt.timedelta(days=1)))


def mechanisms(budget: Budget = BUDGET) -> list[Mechanism]:
    """Every Gaussian mechanism of the schedule as the menu defines it."""
    out = []
    for table in TABLES:
        for measure in table.measures:
            for level in LEVEL_SHARES:
                out.append(Mechanism(f"{table.name}.{measure.name}.{level}",
                                     sigma(table, measure, level, budget) / sensitivity(table, measure, level),
                                     month_factor(_level_days(level))))
    for table, name in distinct_measures():
        for days in BLOCK_DAYS:
            for part in ("numerator", "denominator"):
                out.append(Mechanism(f"repeat.{table.name}.{name}.{days}d.{part}",
                                     scalar_sigma(table, name, budget) / scalar_sensitivity(table, name),
                                     month_factor(days)))
    return out


@functools.cache
def _epsilon(multipliers: tuple[float, ...], delta: float) -> float:
    # Imported on use: the library (and its scipy) loads only in the process that states the bound.
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    # A discretisation of 1e-3 (the default is 1e-4) is 50 times faster and within 1e-3 of epsilon
    # on this schedule; the accountant rounds pessimistically, so the figure stays an upper bound.
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    for multiplier in multipliers:
        accountant.compose(dp_event.GaussianDpEvent(multiplier))
    return float(accountant.get_epsilon(delta))


def epsilon(items: Sequence[Mechanism], *, month: bool = False, delta: float = DELTA) -> float:
    """The composed epsilon at `delta`, per user-day or (month=True) per user-month."""
    multipliers = tuple(sorted(round(m.multiplier / (math.sqrt(m.month_factor) if month else 1.0), 9)
                               for m in items))
    return _epsilon(multipliers, delta)


def from_release(store: ReleaseStore) -> list[Mechanism]:
    """The mechanisms as the release itself records them: per (table, measure, level) the smallest
    noise s.d. any released node of it carries (the worst case for a user-day), per scalar alike."""
    out = []
    for table in TABLES:
        frame = store.read_table(table)
        for measure in table.measures:
            column = f"sigma_{measure.name}"
            worst = frame.group_by(LEVEL).agg(pl.col(column).min()) if frame.height else frame
            for level, s in (worst.iter_rows() if frame.height else ()):
                out.append(Mechanism(f"{table.name}.{measure.name}.{level}",
                                     float(s) / sensitivity(table, measure, level), month_factor(_level_days(level))))
    scalars = store.read_scalars()
    if scalars.height:
        worst = scalars.group_by("table", "measure", "days").agg(pl.col("sigma").min(), pl.col("sensitivity").max())
        for table_name, measure_name, days, s, sens in worst.iter_rows():
            for part in ("numerator", "denominator"):
                out.append(Mechanism(f"repeat.{table_name}.{measure_name}.{days}d.{part}", float(s) / float(sens),
                                     month_factor(int(days))))
    return out


def library() -> str:
    return f"dp-accounting {metadata.version('dp-accounting')} (PLDAccountant, Gaussian events)"


def statement(budget: Budget = BUDGET, delta: float = DELTA) -> dict[str, object]:
    """The bound, as `GET /api/v1/privacy` states it."""
    items = mechanisms(budget)
    return {
        "delta": delta,
        "epsilon_per_user_day": round(epsilon(items, delta=delta), 3),
        "epsilon_per_user_month": round(epsilon(items, month=True, delta=delta), 3),
        "accountant": library(),
        "mechanisms": len(items),
    }


def names(items: Iterable[Mechanism]) -> list[str]:
    return [m.name for m in items]
