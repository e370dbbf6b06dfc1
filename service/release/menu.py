"""The menu: every table the schedule releases, what bounds a user-day's part in it, and how the
privacy budget is shared between its numbers. One place for all of it: the builder, the accountant,
`GET /api/v1/privacy` and docs/privacy.md read these values and nothing else.

A table is one dimension (a keyword, a domain, a platform, a page context, a place of one level)
over time. Its cells are the values of a **public domain** (`domains.py`: the shipped keyword and
site lists, the platforms and page contexts of the event contract, the GeoNames/ISO reference):
never the values the store happens to hold, so whether a cell is released says nothing about who
is in the data. Its measures are sums over the user-days behind a cell:

- `suppressions`, `events`: each user-day's total in a cell clipped to `clip`, greedily in time
  order (the first events count until the clip is reached, so an hour's part never depends on
  later hours);
- `user_days`: each user-day counts 1 in each of its cells, at the hour of its first event there
  (the basis of every user count: `estimates.py`);
- `keyword_days` (places): each keyword counts 1 in a place's day, at the hour it first appears
  among the place's user-days (each user-day's first `KEYWORDS_PER_USER_DAY` keywords);
- `adds`, `removes`, `edits` (keyword changes): each user-day's count of that action on a keyword,
  clipped.

Each user-day touches at most `cells_per_user_day` cells of a table (its first ones, in time
order). Bounds are a documented rule read from the data's shape (docs/privacy.md "The bounds": on
the demo and benchmark data K=3 keeps 97-98 % of keyword and domain suppressions, a clip of 10
keeps 97 % of them; places hold one cell per user-day).

Budget: the menu's share of the user-day's zCDP-free Gaussian budget is split by `weight`
(a measure with weight w gets w / total of the menu's `mu_squared`); each node of each level of
that measure then carries Gaussian noise of s.d. `sigma = sensitivity * sqrt(levels) / mu`, so
every level costs the same. `accountant.py` composes the result with dp-accounting.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping

from service.release.levels import LEVELS
from service.store import schema

SUPPRESSIONS = "suppressions"
EVENTS = "events"
USER_DAYS = "user_days"
KEYWORD_DAYS = "keyword_days"
ADDS, REMOVES, EDITS = "adds", "removes", "edits"
ACTION_MEASURES = {"add": ADDS, "remove": REMOVES, "edit": EDITS}

KEYWORDS_PER_USER_DAY = 3  # a user-day's keywords that count in a place's keyword_days


@dataclasses.dataclass(frozen=True)
class Measure:
    """One released sum of a table. `clip`: what one user-day adds to one cell at most (L1 over the
    day's hours); `weight`: its share of the menu's budget."""

    name: str
    clip: int
    weight: float
    distinct: bool = False  # counts of things (user-days, keyword-days), estimated into users / keywords


@dataclasses.dataclass(frozen=True)
class Table:
    """One released table: `dimension` is the event column its cells are values of."""

    name: str
    source: str                 # the event table it is computed from (schema.SUPPRESSIONS, KEYWORD_CHANGES)
    dimension: str              # the cell's column
    cells_per_user_day: int     # K: a user-day's first K cells of this table count, the rest not
    measures: tuple[Measure, ...]
    every_hour: bool            # True: every cell of the domain at every sub-day node; False: the hot ones
    description: str

    def measure(self, name: str) -> Measure:
        for measure in self.measures:
            if measure.name == name:
                return measure
        raise KeyError(f"table {self.name!r} has no measure {name!r}")

    @property
    def measure_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.measures)


def _sums(clip_suppressions: int, clip_events: int, weight: float) -> tuple[Measure, ...]:
    return (Measure(SUPPRESSIONS, clip_suppressions, weight),
            Measure(EVENTS, clip_events, weight),
            Measure(USER_DAYS, 1, weight, distinct=True))


def _place(level: str, weight: float, every_hour: bool) -> Table:
    return Table(
        name={"country": "countries", "region": "regions", "county": "counties", "city": "cities"}[level],
        source=schema.SUPPRESSIONS, dimension=level, cells_per_user_day=1,
        measures=(*_sums(20, 5, weight), Measure(KEYWORD_DAYS, KEYWORDS_PER_USER_DAY, weight / 4, distinct=True)),
        every_hour=every_hour,
        description=f"suppressions, events, user-days and keyword-days by {level}")


TABLES: tuple[Table, ...] = (
    Table("keywords", schema.SUPPRESSIONS, "keyword", 3, _sums(10, 3, 3.0), False,
          "suppressions, events and user-days by keyword"),
    Table("domains", schema.SUPPRESSIONS, "domain", 3, _sums(10, 3, 1.5), False,
          "suppressions, events and user-days by domain"),
    Table("platforms", schema.SUPPRESSIONS, "platform", 2, _sums(20, 5, 0.5), True,
          "suppressions, events and user-days by platform"),
    Table("page_contexts", schema.SUPPRESSIONS, "page_context", 3, _sums(10, 3, 0.5), True,
          "suppressions, events and user-days by page context"),
    _place("country", 1.0, True),
    _place("region", 0.75, False),
    _place("county", 0.75, False),
    _place("city", 1.5, False),
    Table("keyword_changes", schema.KEYWORD_CHANGES, "keyword", 3,
          (Measure(ADDS, 3, 1.0), Measure(REMOVES, 3, 1.0), Measure(EDITS, 3, 0.5),
           Measure(USER_DAYS, 1, 1.0, distinct=True)), False,
          "keyword adds, removes, edits and user-days by keyword"),
)
TABLES_BY_NAME: Mapping[str, Table] = {t.name: t for t in TABLES}
PLACE_TABLES: Mapping[str, Table] = {t.dimension: t for t in TABLES[4:8]}
SUPPRESSION_TABLES: Mapping[str, Table] = {t.dimension: t for t in TABLES if t.source == schema.SUPPRESSIONS}


@dataclasses.dataclass(frozen=True)
class Budget:
    """The user-day's budget, as the squared parameter of Gaussian differential privacy (mu^2: the
    sum over every Gaussian release of (sensitivity / sigma)^2). `menu`: what the tables spend;
    `repeat_factors`: the per-table distinct-count scalars (`estimates.py`); `hot_min` and
    `hot_sigmas`: the user-days a day a cell needs (and in s.d. of their noise) to be released at
    sub-day nodes the next day."""

    menu: float = 0.30
    repeat_factors: float = 0.001
    delta: float = 1e-10          # per user-day; a user-month's is stated at 31 x
    hot_min: int = 24
    hot_sigmas: float = 4.0


BUDGET = Budget()


def sensitivity(table: Table, measure: Measure, level: str) -> float:
    """The L2 change one user-day can make to one level's nodes of this measure: K cells, each
    changed by at most the clip in L1 over the level's nodes (so at most the clip in L2). A
    place's keyword_days shifts a keyword's first hour when a user-day leaves (-1 there, +1 at the
    next one), hence twice as much at the sub-day levels."""
    if measure.name == KEYWORD_DAYS:
        return measure.clip * (math.sqrt(2) if LEVELS[level].sub_day else 1.0)
    return math.sqrt(table.cells_per_user_day) * measure.clip


@functools.cache
def _total_weight() -> float:
    return sum(m.weight for t in TABLES for m in t.measures)


def mu_squared(table: Table, measure: Measure, budget: Budget = BUDGET) -> float:
    """This measure's share of the menu's mu^2 (over all its levels together)."""
    return budget.menu * measure.weight / _total_weight()


# How a measure's mu^2 is shared between its levels. The week's share is the smallest: one user
# can be in a week node on seven days, so a user-month's change to a week node is up to seven
# user-days' (accountant.month_factor: 205 against 31 at the other levels), and long windows
# still use few week nodes.
LEVEL_SHARES: Mapping[str, float] = {"hour": 0.27, "quarter": 0.27, "day": 0.38, "week": 0.08}


def sigma(table: Table, measure: Measure, level: str, budget: Budget = BUDGET) -> float:
    """The noise s.d. of one node of `level`: the level gets `LEVEL_SHARES[level]` of the measure's
    mu^2, so sigma = sensitivity / sqrt(share * mu^2)."""
    return sensitivity(table, measure, level) / math.sqrt(LEVEL_SHARES[level] * mu_squared(table, measure, budget))
