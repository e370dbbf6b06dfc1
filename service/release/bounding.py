"""Each user-day's part in each table, bounded once, the same way whoever asks and whatever they ask.

`bounded_hours(table, rows)` takes one UTC day's events of the table's source (all of them, or
those up to some hour) and returns, per cell of the table's domain and hour, the bounded sums
of `menu.Table.measures`:

1. a user-day's cells are its first `cells_per_user_day` values of the table's dimension, by the
   time of their first event (ties by value); other cells get nothing from it;
2. in each kept cell, each sum is clipped greedily in time order: an event adds what is left of
   the clip (`min(clip, running total) - min(clip, running total before it)`);
3. `user_days` is 1 in the hour of the user-day's first event in the cell; a place's
   `keyword_days` is 1 in the hour a keyword first appears among the place's user-days (each
   user-day's first `KEYWORDS_PER_USER_DAY` keywords).

Everything is causal (an hour's numbers depend on that hour's and earlier events of the day only),
so releasing an hour as it closes and rebuilding a day later give the same numbers for the same
events. Values outside the table's public domain (`domains.py`) are not released and take no
cell of a user-day.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from service.release import domains
from service.release.menu import (
    ACTION_MEASURES,
    EVENTS,
    KEYWORD_DAYS,
    KEYWORDS_PER_USER_DAY,
    SUPPRESSIONS,
    TABLES,
    USER_DAYS,
    Table,
)
from service.store import schema

HOUR_COLUMN = "hour"
CELL = "cell"
_ORDER = "_order"


class DayRows:
    """One UTC day's events of both sources, sorted once (user, time, then every column: a total
    order that does not depend on how the store returned them), with what several tables share
    (each user-day's first keywords, each table's kept cells) computed once."""

    def __init__(self, rows_by_source: Mapping[str, pl.DataFrame]) -> None:
        self._sorted = {source: self._ordered(source, rows) for source, rows in rows_by_source.items()}
        self._kept: dict[tuple[str, int], pl.DataFrame] = {}
        self._first_keywords: pl.DataFrame | None = None

    @staticmethod
    def _ordered(source: str, rows: pl.DataFrame) -> pl.DataFrame:
        # Dimensions as strings first: a store's Enum codes are not in string order.
        others = [c for c in schema.SCHEMAS[source] if c not in ("user_id", "ts")]
        return (rows.lazy().with_columns(*(pl.col(c).cast(pl.String) for c in schema.DIMENSIONS[source]),
                                         pl.col("ts").dt.truncate("1h").alias(HOUR_COLUMN))
                .sort(["user_id", "ts", *others], nulls_last=True).with_row_index(_ORDER).collect())

    def rows(self, source: str) -> pl.DataFrame:
        return self._sorted[source]

    def kept(self, table: Table, limit: int) -> pl.DataFrame:
        """The rows of each user-day's first `limit` cells of the table, with CELL, in order."""
        key = (table.name, limit)
        if key not in self._kept:
            values = pl.col(table.dimension).cast(pl.String)
            frame = (self._sorted[table.source].lazy()
                     .filter(values.is_not_null() & values.is_in(domains.series(table.dimension).implode()))
                     .with_columns(values.alias(CELL)).collect())
            firsts = (frame.group_by("user_id", CELL).agg(pl.col(_ORDER).min().alias("_first"))
                      .with_columns(pl.col("_first").rank("ordinal").over("user_id").alias("_rank"))
                      .filter(pl.col("_rank") <= limit)
                      .select("user_id", CELL))
            self._kept[key] = frame.join(firsts, on=["user_id", CELL], how="semi").sort(_ORDER)
        return self._kept[key]

    def first_keywords(self) -> pl.DataFrame:
        """(user_id, keyword, its first order and hour) of each user-day's first keywords."""
        if self._first_keywords is None:
            keywords = self._sorted[schema.SUPPRESSIONS].filter(pl.col("keyword").is_not_null())
            self._first_keywords = (
                keywords.group_by("user_id", pl.col("keyword").cast(pl.String))
                .agg(pl.col(_ORDER).min(), pl.col(HOUR_COLUMN).sort_by(_ORDER).first())
                .with_columns(pl.col(_ORDER).rank("ordinal").over("user_id").alias("_rank"))
                .filter(pl.col("_rank") <= KEYWORDS_PER_USER_DAY).drop("_rank"))
        return self._first_keywords


def _empty(table: Table) -> pl.DataFrame:
    return pl.DataFrame(schema={CELL: pl.String, HOUR_COLUMN: pl.Datetime("us", "UTC"),
                                **{m: pl.Int64 for m in table.measure_names}})


def bounded_hours(table: Table, rows: pl.DataFrame | DayRows) -> pl.DataFrame:
    """(cell, hour, one Int64 column per measure) for one UTC day's rows of the table's source (a
    frame of that source, or the day's `DayRows`); only (cell, hour) pairs with some contribution
    appear (the builder makes the domain dense)."""
    day = rows if isinstance(rows, DayRows) else DayRows({table.source: rows})
    if day.rows(table.source).height == 0:
        return _empty(table)
    frame = day.kept(table, table.cells_per_user_day)
    if table.source == schema.KEYWORD_CHANGES:
        return _changes(table, frame)
    parts = [_clipped_sum(frame, SUPPRESSIONS, pl.col("suppressions").cast(pl.Int64), table.measure(SUPPRESSIONS).clip),
             _clipped_sum(frame, EVENTS, pl.lit(1, pl.Int64), table.measure(EVENTS).clip),
             _first_hours(frame)]
    if KEYWORD_DAYS in table.measure_names:
        parts.append(_keyword_days(table, day))
    return _joined(parts, table.measure_names)


def _clipped_sum(frame: pl.DataFrame, name: str, amount: pl.Expr, clip: int) -> pl.DataFrame:
    running = amount.cum_sum().over("user_id", CELL, order_by=_ORDER)
    part = running.clip(upper_bound=clip) - (running - amount).clip(upper_bound=clip)
    return (frame.lazy().select(CELL, HOUR_COLUMN, part.alias(name))
            .group_by(CELL, HOUR_COLUMN).agg(pl.col(name).sum()).collect())


def _first_hours(frame: pl.DataFrame, name: str = USER_DAYS) -> pl.DataFrame:
    return (frame.group_by("user_id", CELL).agg(pl.col(HOUR_COLUMN).sort_by(_ORDER).first())
            .group_by(CELL, HOUR_COLUMN).agg(pl.len().cast(pl.Int64).alias(name)))


def kept_pairs(rows_by_source: Mapping[str, pl.DataFrame] | DayRows) -> dict[tuple[str, str], pl.DataFrame]:
    """Per (table, distinct measure): the day's distinct (unit, cell) pairs behind it, `unit` a
    UInt64 (the user for `user_days`, a hash of the keyword for a place's `keyword_days`): what the
    repeat factors count distinct over a block (`repeat.py`)."""
    day = rows_by_source if isinstance(rows_by_source, DayRows) else DayRows(rows_by_source)
    pairs: dict[tuple[str, str], pl.DataFrame] = {}
    for table in TABLES:
        kept = day.kept(table, table.cells_per_user_day)
        pairs[(table.name, USER_DAYS)] = kept.select(pl.col("user_id").cast(pl.UInt64).alias("unit"), CELL).unique()
        if KEYWORD_DAYS in table.measure_names:
            pairs[(table.name, KEYWORD_DAYS)] = (_place_keywords(table, day)
                                                 .select(pl.col("keyword").hash().alias("unit"), CELL).unique())
    return pairs


def _place_keywords(table: Table, day: DayRows) -> pl.DataFrame:
    """(user_id, keyword, its first order and hour, CELL = the user-day's place) for each user-day's
    first keywords (its place is its first place: a place table keeps one cell a user-day)."""
    places = day.kept(table, 1).select("user_id", CELL).unique()
    return day.first_keywords().join(places, on="user_id")


def _keyword_days(table: Table, day: DayRows) -> pl.DataFrame:
    """Per place and hour: the keywords appearing there first that hour."""
    first = _place_keywords(table, day)
    return (first.group_by(CELL, "keyword").agg(pl.col(HOUR_COLUMN).sort_by(_ORDER).first())
            .group_by(CELL, HOUR_COLUMN).agg(pl.len().cast(pl.Int64).alias(KEYWORD_DAYS)))


def _changes(table: Table, frame: pl.DataFrame) -> pl.DataFrame:
    parts = []
    for action, name in ACTION_MEASURES.items():
        clip = table.measure(name).clip
        acted = frame.filter(pl.col("action").cast(pl.String) == action)
        running = pl.lit(1, pl.Int64).cum_sum().over("user_id", CELL, order_by=_ORDER)
        parts.append(acted.lazy().filter(running <= clip).group_by(CELL, HOUR_COLUMN)
                     .agg(pl.len().cast(pl.Int64).alias(name)).collect())
    parts.append(_first_hours(frame))
    return _joined(parts, table.measure_names)


def _joined(parts: list[pl.DataFrame], measures: tuple[str, ...]) -> pl.DataFrame:
    keys = pl.concat([p.select(CELL, HOUR_COLUMN) for p in parts]).unique()
    out = keys
    for part in parts:
        out = out.join(part, on=[CELL, HOUR_COLUMN], how="left")
    return (out.with_columns(pl.col(m).fill_null(0).cast(pl.Int64) for m in measures)
            .select(CELL, HOUR_COLUMN, *measures).sort(CELL, HOUR_COLUMN))
