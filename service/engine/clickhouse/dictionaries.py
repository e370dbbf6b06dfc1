"""Dimension values by their 64-bit hash, so that queries group by numbers instead of strings.

Grouping by (a string, user_id) makes ClickHouse hash variable-length keys; grouping by
(cityHash64(value), user_id) uses fixed-size keys and measured some 35 % faster on the per-user
stage (top-keywords 30d at 10M events: 200 ms against 320 ms). The published cells need the values
back: this module keeps, per table and column, every value of the published rows next to its hash,
and the cells' hashes are mapped back after the query (`cells.cells`).

Exact, not probable: a column whose values do not all have distinct hashes (a 64-bit collision,
not to be expected among a store's values, but checked) has no dictionary, and its queries group by
the strings as before. The dictionary follows the published generations: a newer snapshot adds the
values of the generations landed since (`generation > covered`); values whose rows were deleted
since (`data demo --replace`) stay in it, which changes no mapping and only makes the collision
check stricter.
"""

from __future__ import annotations

import dataclasses
import threading

import polars as pl

from service.clickhouse.store import ClickHouseSnapshot

HASH = "_hash"
VALUE = "_value"


@dataclasses.dataclass(frozen=True)
class _Known:
    generation: int          # rows of generations up to this one are in `values`
    values: pl.DataFrame     # HASH (UInt64), VALUE (String): one row per distinct value


_known: dict[tuple[str, str, str, str], _Known] = {}
_lock = threading.Lock()


def hashed(column: str, not_null: bool = False) -> str:
    """The SQL of a value's hash (`assumeNotNull` where the rows' nulls are filtered out: a
    non-nullable key groups faster)."""
    return f"cityHash64(assumeNotNull({column}))" if not_null else f"cityHash64({column})"


def values(snapshot: ClickHouseSnapshot, table: str, column: str) -> pl.DataFrame | None:
    """HASH -> VALUE for every value of `column` in the snapshot's rows of `table`; None when two
    values share a hash (then group by the strings)."""
    key = (snapshot.ch.url, snapshot.ch.database, table, column)
    with _lock:
        known = _known.get(key)
    if known is None or known.generation < snapshot.generation:
        since = known.generation if known is not None else 0
        new = snapshot.ch.frame(
            f"SELECT DISTINCT {hashed(column, True)} AS {HASH}, CAST({column} AS String) AS {VALUE} FROM {table} "
            f"WHERE generation > {int(since)} AND generation <= {int(snapshot.generation)} AND isNotNull({column})")
        merged = new if known is None else pl.concat([known.values, new]).unique(maintain_order=True)
        known = _Known(snapshot.generation, merged.select(pl.col(HASH).cast(pl.UInt64), pl.col(VALUE).cast(pl.String)))
        with _lock:
            current = _known.get(key)
            if current is None or current.generation < known.generation:
                _known[key] = known
    distinct = known.values.get_column(HASH).n_unique() == known.values.height
    return known.values if distinct else None
