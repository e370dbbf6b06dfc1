"""The measures every query aggregates, and helpers both engines' publication stages share (the
polars engine's aggregation helpers are in engine/polars/contributions.py).

Measures are named canonically (`suppressions`, `unique_users`, `events`) when they reach the
privacy stage, whatever the endpoint later calls them (`users_est`), so the same cell is
described the same way by every endpoint.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from service.privacy import PILOT, Published

SUPPRESSIONS = "suppressions"
UNIQUE_USERS = "unique_users"
EVENTS = "events"
CELL_MEASURES = (SUPPRESSIONS, UNIQUE_USERS, EVENTS)
TOTAL = "_total"  # suffix of a cell's exact (uncapped) sum, used only to compute capped sums


def published(*measures: str, when_suppressed: str = "drop") -> tuple[Published, ...]:
    """The cell's own measures, suppression decided by its own user count."""
    return tuple(Published(m, m, UNIQUE_USERS, when_suppressed=when_suppressed) for m in measures)


def as_strings(frame: pl.DataFrame, columns: Iterable[str]) -> pl.DataFrame:
    """Dimension columns as plain strings: what is published and returned is never an Enum (codes).

    Also what makes orderings right: a stored Enum's categories are not in string order (a
    segmented snapshot appends new values after the old ones, store/snapshot.py), so every sort,
    cut and tie-break on a dimension runs after this, on the strings."""
    return frame.with_columns(pl.col(column).cast(pl.String) for column in columns)


def pilot_columns(*measures: str) -> list[str]:
    """The frame columns that carry summed measures' pilot sums."""
    return [f"{m}{PILOT}" for m in measures]


def zero_filled(frame: pl.DataFrame, columns: Iterable[str]) -> pl.DataFrame:
    """Missing counts (cells without rows, after a left join) as 0."""
    return frame.with_columns(pl.col(column).fill_null(0) for column in columns)
