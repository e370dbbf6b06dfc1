"""What a /query would cost, known before computing it: an upper bound on its cells.

A /query's time and memory grow with two things (measured in docs/benchmarks.md, "The cost of a
/query"):

- the events it groups (those in the window that match its filters): every one is read and grouped
  by cell and user (`contributions.cell_contributions`), so the per-(cell, user) intermediate has at
  most that many rows;
- its cells (groups): the privacy stage describes, keys (one HMAC) and noises every cell in turn,
  and all of them are kept until the answer is cut to `limit`. Per cell that is many times the
  work of an event (docs/benchmarks.md has the figures), and most of the memory.

The events are bounded by the data (a 90-day window holds what the store holds). The cells are
what a query's shape multiplies: `group_by: [city, domain, platform, page_context, time]` with
`bucket: hour` over 90 days has one cell for almost every event. So the cells are what is bounded:

    cells <= min(events grouped, buckets x product of the grouped dimensions' value counts)

- events grouped: counted exactly on the window;
- buckets: the time buckets that overlap the window (1 without `time`);
- a dimension's value count: the values it takes in the window (on the days the window touches)
  among the filter's values if it is filtered. Geographic levels are counted together, as the
  distinct combinations the data holds (a city lies in one country: country x city counts the
  cities, not their product).

Every term over-counts, never under-counts, so the bound holds for any data: a query is refused
only if it could be that large. The bound is the same for both engines; the two counts come from
the engine (`QueryEngine.counts`, an `EventCounts`): the polars engine counts on the in-memory
frames with a per-snapshot index of each value's first and last day (engine/polars/counts.py), the
ClickHouse engine in SQL with the same results (engine/clickhouse/counts.py), so the same query is
refused, with the same explanation, whichever engine serves it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Protocol

from service.api.windows import BUCKETS, TimeRange, bucket_starts, window_range
from service.engine.requests import FILTER_COLUMNS, GEO_LEVELS, FlexibleQuery
from service.store import day_spans

TIME = "time"
NON_GEO = day_spans.NON_GEO
_COLUMN_FILTERS = {column: key for key, column in FILTER_COLUMNS.items()}  # event column -> filter key
# Windows a narrower query may use, shortest last (as in endpoints.QUERY_WINDOWS).
_WINDOWS = ("90d", "30d", "7d", "24h", "12h", "6h", "1h")
# Plural nouns for the explanation.
_NOUNS = {"keyword": "keywords", "domain": "domains", "platform": "platforms", "page_context": "page contexts",
          "country": "countries", "region": "regions", "county": "counties", "city": "cities"}


@dataclasses.dataclass(frozen=True)
class Factor:
    """One term of the product: at most `values` distinct values (or combinations) of `dimensions`."""

    dimensions: tuple[str, ...]
    values: int

    def describe(self) -> str:
        if len(self.dimensions) == 1:
            return f"{self.values:,} {_NOUNS[self.dimensions[0]]}"
        return f"{self.values:,} {'/'.join(self.dimensions)} combinations"


@dataclasses.dataclass(frozen=True)
class QueryCost:
    """An upper bound on the cells a /query aggregates, and what it is made of."""

    cells: int                    # the bound: min(rows, buckets x product of factors); 1 without group_by
    rows: int                     # events grouped: in the window, matching the filters, grouped columns known
    buckets: int = 1              # time buckets overlapping the window (1 without time in group_by)
    bucket: str | None = None
    factors: tuple[Factor, ...] = ()  # empty when the rows alone settled it (the index was not needed)

    @property
    def product(self) -> int | None:
        """buckets x the factors' values, when they were computed."""
        if not self.factors and self.buckets == 1:
            return None
        product = self.buckets
        for factor in self.factors:
            product *= factor.values
        return product

    def explain(self) -> str:
        """'at most 2,160 hour buckets x 72 domains x 25,900 cities, and no more than the 9,572,108 events
        it would group'."""
        terms = [f"{self.buckets:,} {self.bucket} buckets"] if self.bucket else []
        terms += [factor.describe() for factor in self.factors]
        rows = f"the {self.rows:,} events it would group"
        if not terms or self.product is None:
            return f"one per event at most: {rows}"
        return f"at most {' x '.join(terms)}, and no more than {rows}"


@dataclasses.dataclass(frozen=True)
class Narrowing:
    """A change to the request that brings it within the bound: the changed body fields, and its cost."""

    change: Mapping[str, object]
    cells: int
    text: str


class QueryTooLarge(Exception):
    """The query could aggregate more cells than allowed; `narrowings` says what would fit."""

    def __init__(self, cost: QueryCost, max_cells: int, narrowings: tuple[Narrowing, ...], largest: Factor | None):
        self.cost = cost
        self.max_cells = max_cells
        self.narrowings = narrowings
        self.largest = largest
        super().__init__(self.detail())

    def detail(self) -> str:
        head = (f"This query could aggregate up to {self.cost.cells:,} cells (groups), more than the "
                f"{self.max_cells:,} a query may have: {self.cost.explain()}.")
        options = [n.text for n in self.narrowings]
        keys = ["countries", "keywords"]
        what = "fewer events"
        if self.largest is not None:
            dimension = self.largest.dimensions[-1]
            what = f"fewer {_NOUNS[dimension]} or fewer events"
            keys = [_COLUMN_FILTERS[dimension]] + [k for k in keys if k != _COLUMN_FILTERS[dimension]]
        options.append(f"filters that select {what} (e.g. {', '.join('filters.' + k for k in keys)})")
        return head + " Narrow it with " + "; or ".join(options) + "."


def _days(window: TimeRange) -> tuple[int, int]:
    """Epoch days of the first and the last instant of the window."""
    epoch = dt.date(1970, 1, 1)
    last = window.end - dt.timedelta(microseconds=1)
    return (window.start.astimezone(dt.UTC).date() - epoch).days, (last.astimezone(dt.UTC).date() - epoch).days


def _groups(group_by: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The factors' dimension tuples: each non-geographic dimension alone, the geographic ones together."""
    groups: list[tuple[str, ...]] = [(d,) for d in group_by if d in NON_GEO]
    geo = tuple(level for level in GEO_LEVELS if level in group_by)
    return groups + ([geo] if geo else [])


class EventCounts(Protocol):
    """The two counts a bound is made of, from whatever holds the events."""

    def grouped_rows(self, window: TimeRange, filters: Mapping[str, tuple[str, ...]], grouped: list[str]) -> int:
        """Events in the window that match the filters and have every grouped column known."""

    def factor(self, dimensions: tuple[str, ...], days: tuple[int, int],
               filters: Mapping[str, tuple[str, ...]]) -> Factor:
        """How many distinct values (combinations) of `dimensions`, all known, occur on the epoch
        days [first, last] among the rows that pass the filters on these dimensions' own columns."""


def estimate(counts: EventCounts, as_of: dt.datetime, req: FlexibleQuery, enough: int | None = None) -> QueryCost:
    """The bound on `req`'s cells. With `enough`: when the events alone show the cells are at most
    that, the dimensions are not counted (and no index is built)."""
    window = window_range(req.window, as_of)
    grouped = [d for d in req.group_by if d != TIME]
    count = counts.grouped_rows(window, req.filters, grouped)
    if not req.group_by:
        return QueryCost(cells=1, rows=count)
    bucket = req.bucket if TIME in req.group_by else None
    buckets = len(bucket_starts(window, bucket)) if bucket is not None else 1
    if count == 0 or (enough is not None and count <= enough):
        return QueryCost(cells=count, rows=count, buckets=buckets, bucket=bucket)
    days = _days(window)
    factors = tuple(counts.factor(group, days, req.filters) for group in _groups(req.group_by))
    product = buckets
    for factor in factors:
        product *= factor.values
    return QueryCost(cells=min(count, product), rows=count, buckets=buckets, bucket=bucket, factors=factors)


def check(counts: EventCounts, as_of: dt.datetime, req: FlexibleQuery, max_cells: int) -> QueryCost:
    """The query's cost if it is within `max_cells`; else raises QueryTooLarge with narrowings."""
    cost = estimate(counts, as_of, req, enough=max_cells)
    if cost.cells <= max_cells:
        return cost
    narrowings = tuple(_narrowings(counts, as_of, req, max_cells))
    largest = max(cost.factors, key=lambda f: f.values, default=None)
    raise QueryTooLarge(cost, max_cells, narrowings, largest)


def _narrowings(counts: EventCounts, as_of: dt.datetime, req: FlexibleQuery, max_cells: int) -> Iterator[Narrowing]:
    """Single changes that fit: a coarser bucket, the longest shorter window, each dimension left out."""
    def fits(changed: FlexibleQuery) -> int | None:
        cells = estimate(counts, as_of, changed, enough=max_cells).cells
        return cells if cells <= max_cells else None

    if TIME in req.group_by and req.bucket in BUCKETS:
        for bucket in BUCKETS[BUCKETS.index(req.bucket) + 1:]:
            if (cells := fits(dataclasses.replace(req, bucket=bucket))) is not None:
                yield Narrowing({"bucket": bucket}, cells,
                                f"a coarser bucket: \"bucket\": \"{bucket}\" (at most {cells:,} cells)")
                break
    if req.window in _WINDOWS:
        for window in _WINDOWS[_WINDOWS.index(req.window) + 1:]:
            if (cells := fits(dataclasses.replace(req, window=window))) is not None:
                yield Narrowing({"window": window}, cells,
                                f"a shorter window: \"window\": \"{window}\" (at most {cells:,} cells)")
                break
    for dimension in req.group_by:
        rest = tuple(d for d in req.group_by if d != dimension)
        if (cells := fits(dataclasses.replace(req, group_by=rest))) is not None:
            yield Narrowing({"group_by": list(rest)}, cells,
                            f"fewer dimensions: \"group_by\": {_json_list(rest)} (at most {cells:,} cells)")


def _json_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"\"{v}\"" for v in values) + "]"

