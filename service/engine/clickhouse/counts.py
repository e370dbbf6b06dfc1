"""The /query cost bound's counts (engine/cost.py `EventCounts`) in SQL, over the snapshot's rows.

The same numbers as the polars engine's `FrameCounts`: the events a query would group, counted
exactly; and a dimension's value count as `CardinalityIndex.factor` gives it (values, or geographic
combinations, whose first and last day over the whole snapshot meet the window's days), so the same
query is refused, with the same explanation, whichever engine serves it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from service.api.windows import TimeRange
from service.clickhouse.store import ClickHouseSnapshot
from service.engine.clickhouse.cells import filter_conditions, in_range
from service.engine.cost import Factor
from service.engine.requests import FILTER_COLUMNS, GEO_LEVELS
from service.store import schema

_EPOCH = dt.date(1970, 1, 1)


def _day(epoch_day: int) -> str:
    return f"toDate('{(_EPOCH + dt.timedelta(days=epoch_day)).isoformat()}')"


class ClickHouseCounts:
    """EventCounts of a ClickHouse snapshot (the ClickHouse engine's)."""

    def __init__(self, snapshot: ClickHouseSnapshot) -> None:
        self.snapshot = snapshot

    def grouped_rows(self, window: TimeRange, filters: Mapping[str, tuple[str, ...]], grouped: list[str]) -> int:
        where, parameters = filter_conditions(filters)
        where += [f"isNotNull({column})" for column in grouped]
        conditions = [f"generation <= {int(self.snapshot.generation)}", in_range(window), *where]
        sql = f"SELECT count() AS n FROM {schema.SUPPRESSIONS} WHERE {' AND '.join(f'({c})' for c in conditions)}"
        return int(self.snapshot.ch.frame(sql, parameters).item())

    def factor(self, dimensions: tuple[str, ...], days: tuple[int, int],
               filters: Mapping[str, tuple[str, ...]]) -> Factor:
        geo = dimensions[0] in GEO_LEVELS
        columns = GEO_LEVELS if geo else (dimensions[0],)
        # Filters on the index table's own columns only (as CardinalityIndex.factor).
        own = {key: values for key, values in filters.items() if FILTER_COLUMNS[key] in columns}
        where, parameters = filter_conditions(own)
        where.insert(0, f"generation <= {int(self.snapshot.generation)}")
        aliases = ", ".join(f"{column} AS _c_{column}" for column in columns)
        groups = ", ".join(f"_c_{column}" for column in columns)
        picked = ", ".join(f"_c_{d}" for d in dimensions)
        known = " AND ".join(f"isNotNull(_c_{d})" for d in dimensions)
        first, last = days
        sql = (
            f"SELECT count() AS n FROM (SELECT DISTINCT {picked} FROM ("
            f"SELECT {aliases}, min(toDate(ts)) AS _first, max(toDate(ts)) AS _last FROM {schema.SUPPRESSIONS} "
            f"WHERE {' AND '.join(f'({c})' for c in where)} GROUP BY {groups}) "
            f"WHERE _first <= {_day(last)} AND _last >= {_day(first)} AND {known})"
        )
        return Factor(dimensions, int(self.snapshot.ch.frame(sql, parameters).item()))
