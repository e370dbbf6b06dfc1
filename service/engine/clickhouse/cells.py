"""The per-user and per-cell stages in one SQL query: what `contributions.cell_contributions` computes in
polars, computed by ClickHouse, and handed to the privacy stage in the same shape.

    SELECT <keys>, count() users, sum(least(m, pilot_cap)) m_pilot, sum(m) m_total,
           <the histogram of the totals m above the smallest cap> m_heavy, ...
    FROM (SELECT <keys>, user_id, <m per user> ... FROM <table>
          WHERE generation <= G AND ts in the window AND <filters> GROUP BY <keys>, user_id)
    GROUP BY <keys>

Per cell: the number of users (exact: one inner row per user), the pilot sums, the exact sums, and
per summed column the histogram of the users' totals above the smallest cap the privacy stage can
choose (`PrivacyParams.smallest_cap`; the rule of `privacy.reachable_rows`): each such total and how
many of the cell's users have it. That is all a capped sum needs besides the exact sum
(`contributions.HeavyTotals`), so what crosses the wire grows with the cells and the range of the
totals, not with the users; as Arrow. Cells that need their users only (no sums) count their
(cell, user) pairs. Filters, windows and buckets are SQL; no event row leaves ClickHouse.

Two or more keys are grouped as one UInt64 where they fit (packing.py; one key and `user_id` take
ClickHouse's fastest table as they are), else each by its hash where the column's dictionary
allows (dictionaries.py), else as they are. A window's bound beyond which the
snapshot has no row is not a condition (`time_bounds`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from service.api.windows import TimeRange
from service.clickhouse.store import ClickHouseSnapshot
from service.engine.clickhouse import dictionaries, packing
from service.engine.clickhouse.contributions import COLUMN, USERS, VALUE, HeavyTotals
from service.engine.clickhouse.keys import Key
from service.engine.measures import EVENTS, SUPPRESSIONS, TOTAL, UNIQUE_USERS
from service.engine.requests import FILTER_COLUMNS
from service.privacy import PILOT, Contributions, PrivacyParams

HEAVY = "_heavy"
NO_KEYS = "_cell"  # the one key of a frame with no grouping: a constant (see `cells`)

# The measures of each table, as the per-user stage computes them.
SUPPRESSION_MEASURES = {SUPPRESSIONS: "sum(toInt64(suppressions))", EVENTS: "toInt64(count())"}


def time_literal(moment: dt.datetime) -> str:
    return f"toDateTime64('{moment.astimezone(dt.UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}', 6, 'UTC')"


def in_range(time_range: TimeRange) -> str:
    return f"ts >= {time_literal(time_range.start)} AND ts < {time_literal(time_range.end)}"


def filter_conditions(filters: Mapping[str, tuple[str, ...]]) -> tuple[list[str], dict[str, object]]:
    """One condition per /query filter key (all must hold), each true for any of its values
    (bound as parameters, never spliced into the SQL)."""
    where: list[str] = []
    parameters: dict[str, object] = {}
    for index, (key, values) in enumerate(filters.items()):
        where.append(f"{FILTER_COLUMNS[key]} IN {{f{index}:Array(String)}}")
        parameters[f"f{index}"] = list(values)
    return where, parameters


def _hashed_keys(snapshot: ClickHouseSnapshot, query: Query) -> tuple[Query, dict[str, pl.DataFrame]]:
    """The query with its dimensions grouped by their hashes where the column's dictionary allows
    (dictionaries.py), and those dictionaries by key name, to map the hashes back."""
    keys, mapped = [], {}
    for key in query.keys:
        if not key.column or (known := dictionaries.values(snapshot, query.table, key.column)) is None:
            keys.append(key)
            continue
        keys.append(dataclasses.replace(key, sql=dictionaries.hashed(key.column, key.not_null)))
        mapped[key.name] = known
    return dataclasses.replace(query, keys=keys), mapped


@dataclasses.dataclass
class Query:
    """One two-stage aggregation; `cells` runs it."""

    table: str
    keys: Sequence[Key]
    time_range: TimeRange
    where: Sequence[str] = ()              # extra conditions on event rows (filters, guards)
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    measures: Mapping[str, str] = dataclasses.field(default_factory=lambda: dict(SUPPRESSION_MEASURES))
    per_user_extra: Sequence[str] = ()     # "<sql> AS <name>" in the per-user stage (not contributions)
    per_cell_extra: Sequence[str] = ()     # "<sql> AS <name>" in the per-cell stage (columns of the cells)

    def sql(self, generation: int, smallest_cap: int, pilot_cap: int, bounds: Sequence[str] | None = None) -> str:
        """`bounds`: the window's conditions on the rows (`time_bounds`; default: both bounds)."""
        keys = list(self.keys) or [Key(NO_KEYS, "toUInt8(0)", string=False)]
        inner_keys = [f"{key.sql} AS _k{i}" for i, key in enumerate(keys)]
        inner_names = [f"_k{i}" for i in range(len(keys))]
        outer_keys = [f"_k{i} AS `{key.name}`" for i, key in enumerate(keys)]
        window = [in_range(self.time_range)] if bounds is None else bounds
        where = [f"generation <= {int(generation)}", *window, *self.where]
        rows = f"FROM {self.table} WHERE {' AND '.join(f'({c})' for c in where)}"
        if not (self.measures or self.per_user_extra or self.per_cell_extra):
            # Users only: the (cell, user) pairs, counted per cell (a third faster than a
            # uniqExact(user_id) set per cell: trending by unique users, 10M events).
            return (f"SELECT {', '.join(outer_keys)}, toInt64(count()) AS {UNIQUE_USERS}\n"
                    f"FROM (SELECT {', '.join(inner_keys)}, user_id {rows} GROUP BY {', '.join(inner_names)}, user_id)\n"
                    f"GROUP BY {', '.join(inner_names)}")
        per_user = [f"{sql} AS _m_{name}" for name, sql in self.measures.items()]
        per_cell = [f"toInt64(count()) AS {UNIQUE_USERS}"]
        for name in self.measures:
            per_cell += [f"sum(least(_m_{name}, {int(pilot_cap)})) AS `{name}{PILOT}`",
                         f"sum(_m_{name}) AS `{name}{TOTAL}`",
                         # The totals above the smallest cap as (distinct totals, users): gathered
                         # with groupArrayIf and counted per cell by one sumMap over the whole array
                         # (its keys the totals, each with a 1). Not sumMapIf, which builds two
                         # arrays for every user, nor a one-element array pair per total: over 90
                         # days nearly every user is above the smallest cap (a /query US by county x
                         # platform, 10M events: 380 ms for its SQL with those, 327 with this).
                         f"arrayReduce('sumMap', [groupArrayIf(_m_{name}, _m_{name} > {int(smallest_cap)}) AS _h_{name}], "
                         f"[arrayWithConstant(length(_h_{name}), toInt64(1))]) AS `{name}{HEAVY}`"]
        return (
            f"SELECT {', '.join(outer_keys + per_cell + list(self.per_cell_extra))}\n"
            f"FROM (SELECT {', '.join(inner_keys + ['user_id'] + per_user + list(self.per_user_extra))}\n"
            f"      {rows}\n"
            f"      GROUP BY {', '.join(inner_names)}, user_id)\n"
            f"GROUP BY {', '.join(inner_names)}"
        )


def time_bounds(snapshot: ClickHouseSnapshot, time_range: TimeRange) -> list[str]:
    """The window as conditions on the rows, each bound left out where no row of the snapshot lies
    beyond it (its first and last events, over both tables, say). Reading each row's time and
    comparing it measured a sixth of a 90-day /query at 10M events, for conditions that every row
    meets when the window starts before the first event and the data ends on the hour of `as_of`."""
    first, last = snapshot.first_event, snapshot.last_event
    bounds = []
    if first is None or first < time_range.start:
        bounds.append(f"ts >= {time_literal(time_range.start)}")
    if last is None or last >= time_range.end:
        bounds.append(f"ts < {time_literal(time_range.end)}")
    return bounds


def cells(snapshot: ClickHouseSnapshot, query: Query, params: PrivacyParams) -> tuple[pl.DataFrame, Contributions]:
    """The cells (keys, unique_users, `<measure>_pilot`, extras) and the contributions behind them
    (`HeavyTotals`), in `contributions.cell_contributions`' shape. With no keys: one row (zeros when
    nothing matched) keyed by a constant column `_cell`, which the publication stages pass through
    and leave out. With no measures: the users per cell only."""
    bounds = time_bounds(snapshot, query.time_range)
    packed = packing.plan(snapshot, query.table, query.keys, query.time_range) if len(query.keys) > 1 else None
    if packed is not None:  # the keys as one UInt64 (packing.py), unpacked here
        one_key = dataclasses.replace(query, keys=[Key(packing.PACKED, packed.sql, string=False)])
        sql = one_key.sql(snapshot.generation, params.smallest_cap(), params.pilot_cap, bounds)
        result = packed.unpack(snapshot.ch.frame(sql, query.parameters))
    else:
        hashed, mapped = _hashed_keys(snapshot, query)
        sql = hashed.sql(snapshot.generation, params.smallest_cap(), params.pilot_cap, bounds)
        result = snapshot.ch.frame(sql, query.parameters)
        for name, known in mapped.items():  # each hash back to its value (left join: row order kept)
            values = result.select(pl.col(name).alias(dictionaries.HASH)).join(
                known, on=dictionaries.HASH, how="left", maintain_order="left").get_column(dictionaries.VALUE)
            result = result.with_columns(values.alias(name))
    names = [key.name for key in query.keys] or [NO_KEYS]
    measures = list(query.measures)
    result = result.with_columns(
        *(pl.col(key.name).cast(pl.String) for key in query.keys if key.string),
        pl.col(UNIQUE_USERS).cast(pl.Int64),
        *(pl.col(f"{m}{suffix}").cast(pl.Int64) for m in measures for suffix in (PILOT, TOTAL)),
    )
    if not query.keys and result.is_empty():
        zero = {NO_KEYS: 0, UNIQUE_USERS: 0, **{f"{m}{s}": 0 for m in measures for s in (PILOT, TOTAL)},
                **{f"{m}{HEAVY}": {"1": [], "2": []} for m in measures}}
        result = pl.DataFrame([zero], schema={**result.schema})
    if not measures:  # users only: no sums, nothing to cap
        return result, Contributions(result.select(names).clear(), tuple(names), None)
    heavy = pl.concat([
        result.select(*names, pl.col(f"{m}{HEAVY}").struct.rename_fields([VALUE, USERS]).struct.unnest())
        .explode([VALUE, USERS])
        .drop_nulls(VALUE)
        .select(*names, pl.lit(m).alias(COLUMN), pl.col(VALUE).cast(pl.Int64), pl.col(USERS).cast(pl.Int64))
        for m in measures
    ])
    totals = result.select(*names, *(pl.col(f"{m}{TOTAL}").alias(m) for m in measures))
    frame = result.drop(*(f"{m}{suffix}" for m in measures for suffix in (HEAVY, TOTAL)))
    return frame, HeavyTotals.of(names, totals, heavy)
