"""Each dimension value's first and last UTC day in the suppressions table (and each combination
of the geographic levels the data holds).

`engine/cost.py` bounds a /query's cells from these spans. They are computed when a generation's
snapshot is written (`snapshot`), so a worker that maps the snapshot has them at once instead of
grouping every event of the store when it starts; min and max merge, so a landing combines the
previous snapshot's spans with those of the rows it adds instead of grouping the whole store again.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from service.store.schema import GEO_LEVELS

NON_GEO = ("keyword", "domain", "platform", "page_context")
GEO = "geo"  # the name of the geographic combinations' table
NAMES = (*NON_GEO, GEO)
FIRST, LAST = "first_day", "last_day"


def _keys(name: str) -> list[str]:
    return list(GEO_LEVELS) if name == GEO else [name]


def day_spans(suppressions: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """name -> (key columns as String, first_day, last_day as epoch days, Int32), one row per value
    or combination that occurs."""
    # The first and last time, turned into days on the small result (cheaper than per event).
    span = [pl.col("ts").min().alias(FIRST), pl.col("ts").max().alias(LAST)]
    days = [pl.col(FIRST).dt.epoch("d").cast(pl.Int32), pl.col(LAST).dt.epoch("d").cast(pl.Int32)]
    rows = suppressions.lazy()
    plans = [
        rows.group_by(_keys(name)).agg(span).with_columns(days).with_columns(
            pl.col(key).cast(pl.String) for key in _keys(name)
        )
        for name in NAMES
    ]
    return dict(zip(NAMES, pl.collect_all(plans), strict=True))  # in parallel, one pass each


def merge(old: Mapping[str, pl.DataFrame], new: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The spans of two sets of rows together (what `day_spans` gives for their union)."""
    return {
        name: pl.concat([old[name], new[name]]).group_by(_keys(name)).agg(
            pl.col(FIRST).min(), pl.col(LAST).max()
        )
        for name in NAMES
    }
