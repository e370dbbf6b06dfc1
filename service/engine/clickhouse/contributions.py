"""What a capped sum needs from ClickHouse, per cell rather than per user: how many users of the cell
have each total above the smallest cap.

A capped sum is the cell's exact sum less what its users bring beyond the cap:

    sum over users of min(t, cap) = total - sum over users of (t - cap)+
                                  = total - sum over totals v > cap of (v - cap) x n(v)

where n(v) is the number of the cell's users whose total is v. Users at or below the smallest cap
the privacy stage can choose (`PrivacyParams.smallest_cap`) lose nothing to any cap, so the SQL
(`cells.Query`) keeps, per cell and summed column, the histogram of the totals above it
(distinct totals and their user counts) next to the exact sum. Those cross the wire,
not the users: a cell's histogram has one entry per distinct total, which grows with the range of
the totals, not with the cell's users (at 10M events: some 46,000 entries for top-keywords 30d
where the heavy users were 246,000 rows). The privacy stage reads them through
`Contributions.capped_sums`, whatever cap each cell gets, so any cap rule at or above the smallest
cap gives the same capped sums as the polars engine's per-user rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import polars as pl

from service.privacy import Contributions

COLUMN = "_column"   # which summed column a histogram entry belongs to
VALUE = "_value"     # a total in the cell (above the smallest cap) that some of its users have
USERS = "_users"     # how many of the cell's users have that total
_CAP = "_cap"


@dataclasses.dataclass(frozen=True)
class HeavyTotals(Contributions):
    """Contributions as per-cell histograms of the users' totals above the smallest cap.

    `totals`: keys + each summed column's exact sum per cell. `heavy`: keys + `_column` (the summed
    column), `_value` (a total above the smallest cap) and `_users` (how many users of the cell have
    it). `per_user` holds no rows (the users' totals arrive as histograms)."""

    heavy: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)

    @classmethod
    def of(cls, keys: Sequence[str], totals: pl.DataFrame, heavy: pl.DataFrame) -> HeavyTotals:
        return cls(totals.select(keys).clear(), tuple(keys), totals, heavy)

    def capped_sums(self, caps: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
        """`caps` (keys + `<column>_cap` per column, one row per cell) with each column's capped sum
        (sum over the cell's users of min(total, cap)) added; cells without rows get 0."""
        assert self.totals is not None
        keys = list(self.keys)
        cap_columns = [f"{c}_cap" for c in columns]
        typed = caps.select(*(pl.col(k).cast(self.totals.schema[k]) for k in keys),
                            *(pl.col(c).cast(pl.Int64) for c in cap_columns))
        # One row per (cell, column, cap), joined with the histograms: what the totals above the
        # cap bring beyond it, per cell and column.
        by_column = (typed.lazy().unpivot(index=keys, on=cap_columns, variable_name=COLUMN, value_name=_CAP)
                     .with_columns(pl.col(COLUMN).str.strip_suffix("_cap")))
        beyond = (
            self.heavy.lazy().join(by_column, on=[*keys, COLUMN], how="inner")
            .filter(pl.col(VALUE) > pl.col(_CAP))
            .group_by(keys)
            .agg(((pl.col(VALUE) - pl.col(_CAP)) * pl.col(USERS)).filter(pl.col(COLUMN) == c).sum().alias(f"_beyond_{c}")
                 for c in columns)
        )
        sums = (
            typed.lazy().select(keys)
            .join(self.totals.lazy().select(*keys, *columns), on=keys, how="left", maintain_order="left")
            .join(beyond, on=keys, how="left", maintain_order="left")
            .select((pl.col(c).fill_null(0) - pl.col(f"_beyond_{c}").fill_null(0)).cast(pl.Int64).alias(c)
                    for c in columns)
            .collect()
        )
        return caps.with_columns(sums)

    def split(self, key: str, values: Mapping[str, object], column: str) -> HeavyTotals:
        """The cells split on one key: for each (name, value) of `values`, a column `name` holding
        `column` of the cells whose `key` is `value`; keyed by the other keys (trending's two
        periods, one query: `key` is the period). A cell missing from one part sums 0 there."""
        assert self.totals is not None
        rest = [k for k in self.keys if k != key]
        totals: pl.DataFrame | None = None
        for name, value in values.items():
            part = self.totals.filter(pl.col(key) == value).select(*rest, pl.col(column).alias(name))
            totals = part if totals is None else totals.join(part, on=rest, how="full", coalesce=True)
        assert totals is not None
        names = {value: name for name, value in values.items()}
        heavy = (
            self.heavy.filter((pl.col(COLUMN) == column) & pl.col(key).is_in(list(names)))
            .with_columns(pl.col(key).replace_strict(names, return_dtype=pl.String).alias(COLUMN))
            .drop(key)
        )
        return HeavyTotals.of(rest, totals.fill_null(0), heavy)
