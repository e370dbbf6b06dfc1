"""The release schedule: when an hour closes, release every node that closes with it.

`release_through(store, events, key, through)` releases, for every table of the menu and every UTC
day from the store's first event up to `through` (a whole hour), each node of the time hierarchy
that has closed by then and is not yet in the release:

- the day and the ISO week (every cell of the table's public domain: a cell with no events gets
  noise like any other, so being released says nothing of who is in the data);
- the hours and quarters of a day, for the table's *hot* cells: the whole domain for the small
  tables (platforms, page contexts, countries), else the cells whose released day before held at
  least `Budget.hot_min` user-days (a rule read from released numbers: post-processing). A cold
  cell's hours are estimated from its day (`windows.py`);
- the repeat factors' scalars of the 7-, 30- and 90-day blocks that end (`estimates.py`).

Released nodes are never released again: a node already in the release is skipped, so running the
schedule twice, or after a kill -9, releases nothing twice, and an event that lands after its hour
was released is kept in the store but not in the menu (docs/privacy.md "Late events").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np
import polars as pl

from service.release import domains
from service.release.bounding import CELL, HOUR_COLUMN, DayRows, bounded_hours, kept_pairs
from service.release.levels import LEVELS, Node, nodes_of_day
from service.release.menu import BUDGET, TABLES, USER_DAYS, Budget, Table, sigma
from service.release.noise import key_fingerprint, node_draws
from service.release.repeat import BLOCK_DAYS, block_end, scalar_rows
from service.release.storage import CELL as CELL_COLUMN
from service.release.storage import LEVEL, SCALAR_SCHEMA, SCALARS, START, ReleaseStore, node_schema


class DayEvents(Protocol):
    """What the schedule reads of an engine's store: one UTC day's rows of an event table."""

    def first_day(self) -> dt.date | None: ...

    def last_event(self) -> dt.datetime | None: ...

    def rows(self, source: str, day: dt.date) -> pl.DataFrame: ...


@dataclasses.dataclass
class Summary:
    through: dt.datetime | None
    nodes: int = 0
    days: int = 0
    seconds: float = 0.0


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


@functools.cache
def _domain_series(table_name: str) -> pl.Series:
    table = next(t for t in TABLES if t.name == table_name)
    return pl.Series(CELL_COLUMN, domains.domain(table), dtype=pl.String)


@functools.cache
def _index(table_name: str) -> dict[str, int]:
    return {value: i for i, value in enumerate(_domain_series(table_name))}


@dataclasses.dataclass(frozen=True)
class DayExact:
    """A table's bounded sums of one UTC day, as arrays over its (cell, hour) pairs with any
    contribution: `positions` index the domain, `hours` count from midnight, `values[m]` per measure."""

    day: dt.date
    size: int
    positions: np.ndarray
    hours: np.ndarray
    values: dict[str, np.ndarray]

    def of(self, node: Node, measure: str) -> np.ndarray:
        """The node's exact sums, one per domain cell (the node lies within this day)."""
        first = int((node.start - _midnight(self.day)) / dt.timedelta(hours=1))
        span = int(LEVELS[node.level].length / dt.timedelta(hours=1))
        inside = (self.hours >= first) & (self.hours < first + span)
        return np.bincount(self.positions[inside], weights=self.values[measure][inside],
                           minlength=self.size).astype(np.int64)

    def whole_day(self, measure: str) -> np.ndarray:
        return np.bincount(self.positions, weights=self.values[measure], minlength=self.size).astype(np.int64)


def day_exact(table: Table, day: dt.date, hours: pl.DataFrame) -> DayExact:
    """`bounding.bounded_hours`' frame as arrays (see `DayExact`)."""
    size = len(domains.domain(table))
    if hours.height == 0:
        empty = np.zeros(0, dtype=np.int64)
        return DayExact(day, size, empty, empty, {m: empty for m in table.measure_names})
    positions = hours.get_column(CELL).replace_strict(_index(table.name), return_dtype=pl.Int64).to_numpy()
    hour = ((hours.get_column(HOUR_COLUMN) - _midnight(day)).dt.total_hours()).to_numpy()
    return DayExact(day, size, positions, hour, {m: hours.get_column(m).to_numpy() for m in table.measure_names})


@dataclasses.dataclass(frozen=True)
class NodeRows:
    """One node's released values, as arrays: `positions` index the table's domain (-1: the
    node's marker row, which says the node was released, and with what noise, even when it holds
    no cell); `values[m]` and `sigmas[m]` per measure."""

    node: Node
    positions: np.ndarray
    values: dict[str, np.ndarray]
    sigmas: dict[str, float]


def node_rows(table: Table, node: Node, exact: Callable[[str], np.ndarray], positions: np.ndarray,
              key: bytes, budget: Budget = BUDGET) -> NodeRows:
    """The node's exact bounded sums (`exact(measure)`: one per domain cell) plus its draws, for
    the domain cells at `positions` (the whole domain, or a day's hot cells in domain order: the
    i-th draw of the node goes to the i-th of them), and its marker."""
    values, sigmas = {}, {}
    for measure in table.measures:
        s = sigma(table, measure, node.level, budget)
        noisy = exact(measure.name)[positions] + node_draws(key, table.name, measure.name, node, len(positions), s)
        values[measure.name] = np.concatenate([[0], noisy])
        sigmas[measure.name] = s
    return NodeRows(node, np.concatenate([[-1], positions]).astype(np.int64), values, sigmas)


def rows_frame(table: Table, parts: list[NodeRows]) -> pl.DataFrame:
    """Released nodes as the release table's rows (storage.node_schema)."""
    lengths = [len(p.positions) for p in parts]
    positions = np.concatenate([p.positions for p in parts])
    marker = positions < 0
    starts = np.repeat(np.array([p.node.start.timestamp() * 1_000_000 for p in parts], dtype=np.int64), lengths)
    columns: dict[str, pl.Series] = {
        LEVEL: pl.Series(LEVEL, np.repeat(np.array([p.node.level for p in parts]), lengths), dtype=pl.String),
        START: pl.Series(START, starts).cast(pl.Datetime("us", "UTC")),
        CELL_COLUMN: _domain_series(table.name).gather(np.where(marker, 0, positions))
                     .scatter(np.flatnonzero(marker), None),
    }
    for name in table.measure_names:
        values = pl.Series(name, np.concatenate([p.values[name] for p in parts]), dtype=pl.Int64)
        columns[name] = values.scatter(np.flatnonzero(marker), None)
        columns[f"sigma_{name}"] = pl.Series(f"sigma_{name}", np.repeat([p.sigmas[name] for p in parts], lengths),
                                             dtype=pl.Float64)
    return pl.DataFrame(columns).select(node_schema(table).keys())


def hot_cells(store: ReleaseStore, table: Table, day: dt.date, budget: Budget = BUDGET) -> list[str]:
    """The cells whose hours and quarters `day` releases (see the module docstring): the day before
    released at least `Budget.hot_min` user-days for them, and at least `Budget.hot_sigmas` times
    that number's noise s.d., so that noise alone makes few cells hot."""
    if table.every_hour:
        return list(domains.domain(table))
    floor = max(budget.hot_min, budget.hot_sigmas * sigma(table, table.measure(USER_DAYS), "day", budget))
    before = store.read_day(table, day - dt.timedelta(days=1))
    hot = before.filter((pl.col(LEVEL) == "day") & pl.col(CELL_COLUMN).is_not_null() & (pl.col(USER_DAYS) >= floor))
    return sorted(hot.get_column(CELL_COLUMN).to_list())


def _days(first: dt.date, through: dt.datetime) -> Iterator[dt.date]:
    day = first
    while _midnight(day) < through:
        yield day
        day += dt.timedelta(days=1)


def release_through(store: ReleaseStore, events: DayEvents, key: bytes, through: dt.datetime,
                    budget: Budget = BUDGET, progress: Callable[[int, int], None] | None = None) -> Summary:
    """Release every node closed by `through` (a whole UTC hour) that is not yet released."""
    with store.writing():
        made_with = store.state().get("key")
        if made_with and made_with != key_fingerprint(key):
            raise ReleaseKeyChanged(
                "the release in this data directory was made under another SIGNALS_SECRET: releasing more hours "
                "under this one would mix two releases. Run `python -m service data release --rebuild` to make "
                "the release again under this secret (docs/privacy.md \"Late events, rebuilding, secrets\").")
        return _release_through(store, events, key, through, budget, progress)


class ReleaseKeyChanged(RuntimeError):
    """The release on disk was made under another secret than the one given."""


def _release_through(store: ReleaseStore, events: DayEvents, key: bytes, through: dt.datetime,
                     budget: Budget, progress: Callable[[int, int], None] | None) -> Summary:
    through = through.replace(minute=0, second=0, microsecond=0)
    started = time.monotonic()
    first = events.first_day()
    if first is None:
        return Summary(store.through())
    # Every node processed with a day closes by that day's end: days that ended before the last
    # completed run's `through` are whole already (a killed run published no state: its days are
    # done again, and what it had written is kept).
    done_through = store.through()
    if done_through is not None:
        first = max(first, (done_through - dt.timedelta(days=1)).date())
    days = list(_days(first, through))
    summary = Summary(through)
    exacts: dict[tuple[str, dt.date], DayExact] = {}
    pairs: dict[dt.date, dict[tuple[str, str], pl.DataFrame]] = {}
    deferred: list[dt.date] = []

    rows: dict[dt.date, DayRows] = {}

    def rows_of(day: dt.date) -> DayRows:
        if day not in rows:
            rows.clear()  # the schedule moves forward: one day's rows at a time
            rows[day] = DayRows({source: events.rows(source, day) for source in {t.source for t in TABLES}})
        return rows[day]

    def exact_of(table: Table, day: dt.date) -> DayExact:
        if (table.name, day) not in exacts:
            exacts[(table.name, day)] = day_exact(table, day, bounded_hours(table, rows_of(day)))
        return exacts[(table.name, day)]

    def pairs_of(day: dt.date) -> dict[tuple[str, str], pl.DataFrame]:
        if day not in pairs:
            pairs[day] = kept_pairs(rows_of(day))
        return pairs[day]

    for done, day in enumerate(days):
        for table in TABLES:
            everything = np.arange(len(domains.domain(table)), dtype=np.int64)
            released = store.released_nodes(table, day)
            wanted = [n for n in nodes_of_day(day) if n.end <= through and (n.level, n.start) not in released]
            released_rows = []
            if wanted:
                exact = exact_of(table, day)
                hot = np.array([_index(table.name)[c] for c in hot_cells(store, table, day, budget)], dtype=np.int64)
                for node in wanted:
                    released_rows.append(node_rows(table, node, functools.partial(exact.of, node), hot
                                          if LEVELS[node.level].sub_day else everything, key, budget))
            if released_rows:
                store.add(table.name, day, rows_frame(table, released_rows), node_schema(table))
                summary.nodes += len(released_rows)
            week = _week_closing(day, through)
            if week is not None and (week.level, week.start) not in store.released_nodes(table, week.start.date()):
                week_days = [exact_of(table, week.start.date() + dt.timedelta(days=i)) for i in range(7)]

                def week_sum(measure: str, days_: list[DayExact] = week_days, size: int = len(everything)) -> np.ndarray:
                    return sum((d.whole_day(measure) for d in days_), np.zeros(size, np.int64))

                store.add(table.name, week.start.date(),
                          rows_frame(table, [node_rows(table, week, week_sum, everything, key, budget)]), node_schema(table))
                summary.nodes += 1
        if any(block_end(day, n) and day - dt.timedelta(days=n - 1) < days[0] for n in BLOCK_DAYS):
            deferred.append(day)  # a block reaching back before this run: after the hour is published
        else:
            _release_scalars(store, pairs_of, key, day, through, budget)
        # Days more than a week back are no longer needed for a week node, nor a block's pairs
        # more than its longest block back.
        for stale in [k for k in exacts if k[1] <= day - dt.timedelta(days=7)]:
            del exacts[stale]
        for old in [d for d in pairs if d <= day - dt.timedelta(days=max(BLOCK_DAYS))]:
            del pairs[old]
        summary.days += 1
        if progress is not None:
            progress(done + 1, len(days))
    summary.seconds = time.monotonic() - started
    run: dict[str, object] = {"nodes": summary.nodes, "days": summary.days, "seconds": round(summary.seconds, 2)}
    store.publish(through, key_fingerprint(key), run)
    if deferred:  # the hour's nodes are out; a block's repeat factors read its days again
        for day in deferred:
            _release_scalars(store, pairs_of, key, day, through, budget)
        store.publish(through, key_fingerprint(key), {**run, "scalars_of": [d.isoformat() for d in deferred]})
    return summary


def _week_closing(day: dt.date, through: dt.datetime) -> Node | None:
    """The week node that closes at the end of `day` (a Sunday), when that end is released."""
    if day.weekday() != 6 or _midnight(day + dt.timedelta(days=1)) > through:
        return None
    return Node(_midnight(day - dt.timedelta(days=6)), "week")


def _release_scalars(store: ReleaseStore, pairs_of: Callable[[dt.date], dict[tuple[str, str], pl.DataFrame]],
                     key: bytes, day: dt.date, through: dt.datetime, budget: Budget) -> None:
    """The repeat factors' scalars of every block that ends with `day` (when released by then)."""
    if _midnight(day + dt.timedelta(days=1)) > through:
        return
    ending = [days for days in BLOCK_DAYS if block_end(day, days)]
    if not ending:
        return
    have = store.read_day_scalars(day)
    rows = []
    for days in ending:
        if have.filter(pl.col("days") == days).height:
            continue
        first = day - dt.timedelta(days=days - 1)
        rows.append(scalar_rows(first, days, [pairs_of(first + dt.timedelta(days=i)) for i in range(days)],
                                key, budget))
    if rows:
        store.add(SCALARS, day, pl.concat(rows, how="vertical"), SCALAR_SCHEMA)


__all__ = ["DayEvents", "Summary", "hot_cells", "node_rows", "release_through", "START"]
