"""The /query cost bound's counts (engine/cost.py `EventCounts`) over the polars engine's in-memory
snapshot: the events a query would group, counted on the window's rows, and each dimension's value
count from a per-snapshot index of each value's first and last day (`CardinalityIndex`, from
`store/day_spans.py`).

The index is built once per snapshot: by the web process when it loads the data (service/backend.py
`ParquetBackend.warm`), else on the first estimate that needs it; an estimate then is cheap, and one
without the index (the events alone settle it) needs none (figures: docs/benchmarks.md, "The cost of
a /query").
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping

import polars as pl

from service.api.windows import TimeRange
from service.engine.cost import Factor
from service.engine.polars.contributions import key_guards
from service.engine.polars.slicing import time_slice
from service.engine.requests import FILTER_COLUMNS, GEO_LEVELS
from service.store import day_spans
from service.store.reader import EventFrames

NON_GEO = day_spans.NON_GEO
FIRST, LAST = day_spans.FIRST, day_spans.LAST


class CardinalityIndex:
    """For each value of each dimension (and each combination of the geographic levels the data
    holds), the first and last UTC day it occurs on (`day_spans`). A window's value count is then a
    filter over a few thousand rows: the values whose span meets the window's days."""

    def __init__(self, spans: Mapping[str, pl.DataFrame]) -> None:
        self._tables: dict[str, pl.DataFrame] = {name: spans[name] for name in NON_GEO}
        self._geo = spans[day_spans.GEO]

    def factor(self, dimensions: tuple[str, ...], days: tuple[int, int],
               filters: Mapping[str, tuple[str, ...]]) -> Factor:
        """How many distinct values (combinations) of `dimensions`, all known (not null), occur on the
        days [first, last] among the rows that pass the filters on these dimensions' table."""
        geo = dimensions[0] in GEO_LEVELS
        table = self._geo if geo else self._tables[dimensions[0]]
        first, last = days
        conditions = [pl.col(FIRST) <= last, pl.col(LAST) >= first]
        conditions += [pl.col(d).is_not_null() for d in dimensions]
        for key, values in filters.items():
            column = FILTER_COLUMNS[key]
            if column in table.columns:
                conditions.append(pl.col(column).is_in(list(values)))
        present = table.lazy().filter(conditions).select(dimensions)
        if geo and len(dimensions) < len(GEO_LEVELS):
            present = present.unique()
        return Factor(dimensions, present.collect().height)


_indexes: weakref.WeakKeyDictionary[EventFrames, CardinalityIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def index_for(frames: EventFrames) -> CardinalityIndex:
    """The snapshot's index, kept while the snapshot lives: from the spans the snapshot carries
    (computed when it was landed), else built on first use. The web process asks for it when it
    loads the data (service/backend.py), so a worker's first /query does not wait."""
    index = _indexes.get(frames)
    if index is None:
        with _indexes_lock:
            index = _indexes.get(frames)
            if index is None:
                spans = frames.spans if frames.spans is not None else day_spans.day_spans(frames.suppressions)
                index = _indexes[frames] = CardinalityIndex(spans)
    return index


class FrameCounts:
    """EventCounts of an in-memory snapshot (the polars engine's)."""

    def __init__(self, frames: EventFrames) -> None:
        self.frames = frames

    def grouped_rows(self, window: TimeRange, filters: Mapping[str, tuple[str, ...]], grouped: list[str]) -> int:
        rows = time_slice(self.frames.suppressions, window)
        conditions = [pl.col(FILTER_COLUMNS[key]).is_in(list(values)) for key, values in filters.items()]
        conditions += key_guards(rows, grouped)
        count = rows.select(pl.all_horizontal(conditions).sum()).item() if conditions else rows.height
        return int(count or 0)

    def factor(self, dimensions: tuple[str, ...], days: tuple[int, int],
               filters: Mapping[str, tuple[str, ...]]) -> Factor:
        return index_for(self.frames).factor(dimensions, days, filters)
