"""Reading the release: a table's measures over any window of whole hours, as sums of released
nodes. Nothing here draws noise or reads an event: every number is post-processing.

A window is `levels.cover`ed by nodes. Day and week nodes hold every cell of the table's domain.
Hour and quarter nodes hold the day's hot cells (`builder.hot_cells`); a cold cell's part of a
sub-day node is estimated from its day: its value on the node's day (or, while that day is still
open, the day before) times the node's *share*, the hot cells' total in the node over their total
on that same reference day (per measure; hours / 24 when the hot cells say nothing). Each
estimate carries its noise variance (`<measure>_var`: the nodes' sigma^2, a cold part's share^2
sigma^2), which the answers use for intervals and for the small-cell rule.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from service.release.levels import LEVELS, Node, cover
from service.release.menu import TABLES, Table
from service.release.storage import CELL, LEVEL, START, ReleaseStore

DAY = dt.timedelta(days=1)
VAR = "_var"


def _midnight(t: dt.datetime) -> dt.datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


@dataclasses.dataclass(frozen=True, eq=False)
class TableView:
    """One table's released nodes, indexed for reading."""

    table: Table
    rows: pl.DataFrame                                   # markers dropped; sorted by level, start, cell
    by_node: Mapping[tuple[str, dt.datetime], tuple[int, int]]  # (level, start) -> (offset, length)
    shares: Mapping[tuple[str, dt.datetime], Mapping[str, float]]  # sub-day node -> measure -> share
    reference_day: Mapping[dt.date, dt.datetime]          # a day with sub-day nodes -> its reference day

    @classmethod
    def build(cls, table: Table, released: pl.DataFrame) -> TableView:
        rows = (released.filter(pl.col(CELL).is_not_null())
                .with_columns(*(pl.col(m).cast(pl.Float64) for m in table.measure_names),
                              *(pl.col(f"sigma_{m}").pow(2).alias(m + VAR) for m in table.measure_names))
                .select(LEVEL, START, CELL, *table.measure_names, *(m + VAR for m in table.measure_names))
                .sort(LEVEL, START, CELL))
        spans = (rows.with_row_index("_i").group_by(LEVEL, START, maintain_order=True)
                 .agg(pl.col("_i").min().alias("offset"), pl.len().alias("length")))
        by_node = {(level, start): (int(offset), int(length)) for level, start, offset, length in spans.iter_rows()}
        released_nodes = set(released.select(LEVEL, START).unique().iter_rows())
        shares: dict[tuple[str, dt.datetime], dict[str, float]] = {}
        reference: dict[dt.date, dt.datetime] = {}
        if not table.every_hour:
            for _level, start in released_nodes:
                if LEVELS[_level].sub_day:
                    day = start.date()
                    midnight = _midnight(start)
                    reference[day] = midnight if ("day", midnight) in released_nodes else midnight - DAY
            shares = _shares(table, rows, reference)
        return cls(table, rows, by_node, shares, reference)

    def node_rows(self, level: str, start: dt.datetime) -> pl.DataFrame:
        offset, length = self.by_node.get((level, start), (0, 0))
        return self.rows.slice(offset, length)

    def released(self, node: Node) -> bool:
        return (node.level, node.start) in self.by_node or (node.level, node.start) in self.shares

    # --- answers ---------------------------------------------------------------------------------

    def window(self, start: dt.datetime, end: dt.datetime, cells: Sequence[str] | None = None) -> pl.DataFrame:
        """Per cell of the domain (or of `cells`): every measure summed over [start, end), with its
        variance."""
        parts = self._parts(cover(start, end))
        if cells is not None:
            wanted = pl.Series(CELL, list(cells), dtype=pl.String).implode()
            parts = [part.filter(pl.col(CELL).is_in(wanted)) for part in parts]
        measures = [*self.table.measure_names, *(m + VAR for m in self.table.measure_names)]
        if not parts:
            return pl.DataFrame(schema={CELL: pl.String, **{m: pl.Float64 for m in measures}})
        return pl.concat(parts, how="vertical").group_by(CELL).agg(pl.col(m).sum() for m in measures)

    def buckets(self, cell: str, ranges: Sequence[tuple[dt.datetime, dt.datetime]]) -> pl.DataFrame:
        """One cell over consecutive ranges: `ts` (each range's start) and every measure."""
        measures = [*self.table.measure_names, *(m + VAR for m in self.table.measure_names)]
        cell_rows = self.rows.filter(pl.col(CELL) == cell)
        keyed = {(row[LEVEL], row[START]): row for row in cell_rows.iter_rows(named=True)}
        out = []
        for first, last in ranges:
            nodes = cover(first, last)
            values = self._cell_nodes(keyed, nodes)
            out.append({"ts": first, **{m: float(values[m]) for m in measures}})
        return pl.DataFrame(out, schema={"ts": pl.Datetime("us", "UTC"), **{m: pl.Float64 for m in measures}})

    def _parts(self, nodes: list[Node]) -> list[pl.DataFrame]:
        measures = self.table.measure_names
        parts = []
        cold: dict[dt.date, dict[str, float]] = {}
        for node in nodes:
            parts.append(self.node_rows(node.level, node.start))
            if LEVELS[node.level].sub_day and not self.table.every_hour and node.start.date() in self.reference_day:
                share = self.shares.get((node.level, node.start))
                if share is None:  # no hot cell that day: a plain fraction of the day
                    share = {m: LEVELS[node.level].length / DAY for m in measures}
                total = cold.setdefault(node.start.date(), {m: 0.0 for m in measures})
                for m in measures:
                    total[m] += share[m]
        for day, share in cold.items():
            midnight = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
            hot = self.node_rows("hour", midnight).select(CELL)
            reference = self.node_rows("day", self.reference_day[day]).join(hot, on=CELL, how="anti")
            parts.append(reference.with_columns(
                *(pl.col(m) * share[m] for m in measures),
                *(pl.col(m + VAR) * share[m] ** 2 for m in measures)))
        return parts

    def _cell_nodes(self, keyed: Mapping[tuple[str, dt.datetime], Mapping[str, Any]],
                    nodes: list[Node]) -> dict[str, float]:
        """One cell's measures over `nodes` (`keyed`: its released rows by (level, start))."""
        measures = self.table.measure_names
        out = {m: 0.0 for m in [*measures, *(x + VAR for x in measures)]}
        for node in nodes:
            row = keyed.get((node.level, node.start))
            if row is None and LEVELS[node.level].sub_day and node.start.date() in self.reference_day:
                reference = keyed.get(("day", self.reference_day[node.start.date()]))
                share = self.shares.get((node.level, node.start)) or {m: LEVELS[node.level].length / DAY for m in measures}
                if reference is not None:
                    for m in measures:
                        out[m] += reference[m] * share[m]
                        out[m + VAR] += reference[m + VAR] * share[m] ** 2
                continue
            if row is not None:
                for m in [*measures, *(x + VAR for x in measures)]:
                    out[m] += row[m]
        return out


def _shares(table: Table, rows: pl.DataFrame, reference: Mapping[dt.date, dt.datetime]
            ) -> dict[tuple[str, dt.datetime], dict[str, float]]:
    """Each sub-day node's share per measure: its hot cells' total over the same cells' total on
    the node's reference day (the cells of a day's first hour are that day's hot cells)."""
    measures = table.measure_names
    if not reference:
        return {}
    sub = rows.filter(pl.col(LEVEL).is_in(["hour", "quarter"]))
    hot = (sub.filter((pl.col(LEVEL) == "hour") & (pl.col(START).dt.hour() == 0))
           .select(pl.col(START).alias("_day"), CELL))
    refs = pl.DataFrame({"_day": [dt.datetime(d.year, d.month, d.day, tzinfo=dt.UTC) for d in reference],
                         "_ref": list(reference.values())},
                        schema={"_day": pl.Datetime("us", "UTC"), "_ref": pl.Datetime("us", "UTC")})
    days = rows.filter(pl.col(LEVEL) == "day").select(pl.col(START).alias("_ref"), CELL, *measures)
    reference_totals = (hot.join(refs, on="_day").join(days, on=["_ref", CELL])
                        .group_by("_day").agg(pl.col(m).sum() for m in measures))
    totals = (sub.group_by(LEVEL, START).agg(pl.col(m).sum() for m in measures)
              .with_columns(pl.col(START).dt.truncate("1d").alias("_day"))
              .join(reference_totals, on="_day", how="left", suffix="_ref"))
    out: dict[tuple[str, dt.datetime], dict[str, float]] = {}
    for row in totals.iter_rows(named=True):
        fraction = LEVELS[row[LEVEL]].length / DAY
        share = {}
        for m in measures:
            part, whole = row[m], row[m + "_ref"]
            share[m] = part / whole if whole is not None and whole > 0 and part > 0 else fraction
        out[(row[LEVEL], row[START])] = share
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class Release:
    """One generation of the release, as every answer reads it."""

    generation: int
    through: dt.datetime | None
    key: str
    views: Mapping[str, TableView]
    scalars: pl.DataFrame

    @classmethod
    def load(cls, store: ReleaseStore) -> Release:
        state = store.state()
        through = store.through()
        views = {t.name: TableView.build(t, store.read_table(t)) for t in TABLES}
        return cls(int(str(state.get("generation", 0))), through, str(state.get("key", "")), views,
                   store.read_scalars())

    def view(self, name: str) -> TableView:
        return self.views[name]
