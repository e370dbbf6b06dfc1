"""The events the schedule reads, one UTC day at a time, from either engine's store."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import polars as pl

from service.store import schema

if TYPE_CHECKING:
    from service.clickhouse.store import ClickHouseSnapshot
    from service.store.reader import EventFrames

_DAY = dt.timedelta(days=1)


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


class FrameDays:
    """A polars snapshot's days: a zero-copy slice of each table, which the store keeps sorted by ts."""

    def __init__(self, frames: EventFrames) -> None:
        self.frames = frames

    def first_day(self) -> dt.date | None:
        first = self.frames.first_event
        return first.date() if first is not None else None

    def last_event(self) -> dt.datetime | None:
        return self.frames.last_event

    def rows(self, source: str, day: dt.date) -> pl.DataFrame:
        frame = self.frames.suppressions if source == schema.SUPPRESSIONS else self.frames.keyword_changes
        ts = frame.get_column("ts")
        start = int(ts.search_sorted(_midnight(day), side="left"))
        end = int(ts.search_sorted(_midnight(day + _DAY), side="left"))
        return frame.slice(start, max(end - start, 0))


class ClickHouseDays:
    """A ClickHouse snapshot's days: the rows of its published generations, in the stored columns."""

    def __init__(self, snapshot: ClickHouseSnapshot) -> None:
        self.snapshot = snapshot

    def first_day(self) -> dt.date | None:
        first = self.snapshot.first_event
        return first.date() if first is not None else None

    def last_event(self) -> dt.datetime | None:
        return self.snapshot.last_event

    def rows(self, source: str, day: dt.date) -> pl.DataFrame:
        columns = ", ".join(schema.SCHEMAS[source])
        frame = self.snapshot.ch.frame(
            f"SELECT {columns} FROM {source} WHERE generation <= {{g:UInt32}} AND ts >= {{a:DateTime64(6, 'UTC')}} "
            f"AND ts < {{b:DateTime64(6, 'UTC')}} ORDER BY ts",
            {"g": self.snapshot.generation, "a": _midnight(day), "b": _midnight(day + _DAY)})
        return frame.select(pl.col(c).cast(t) for c, t in schema.SCHEMAS[source].items())
