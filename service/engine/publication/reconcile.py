"""Published numbers that agree with each other: a row's user count never exceeds the counts those
users made in the same row.

Every user counted in a row made at least one event there, and every event hid at least one item
(keyword-list activity: every user counted made at least one add, remove or edit), so the exact
numbers always satisfy users <= events <= suppressions. The privacy stage adds independent noise
to each (and caps each user's contribution), so the published numbers can break it: keyword
activity showing 258 users and 239 events. Here the user count moves down to the smallest count
beside it; the counts themselves stay as published, so sums across rows, the derived totals
(total_events = adds + removes + edits) and the ranks by them are unchanged. It is
post-processing of published numbers only (no data are read), so it costs no privacy.
docs/privacy.md "Numbers that agree with each other" says which number moves and why.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from service.engine.noise_std import LOWERED, STD


def users_within_counts(frame: pl.DataFrame, users: str, counts: Sequence[str]) -> pl.DataFrame:
    """`frame` with `users` lowered, row by row, to the smallest of itself and `counts` (the
    events, suppressions or list changes of those same users in that row). With intervals (the
    frame has `<users>_std`), how far each was lowered, in `<users>_lowered_std`: the exact user
    count may lie as far above the lowered number as above the draw (engine/intervals.py)."""
    if not counts or frame.is_empty():
        return frame
    lowered = pl.min_horizontal(users, *counts).cast(frame.schema[users])
    extra = [(pl.col(users) - lowered).cast(pl.Float64).alias(f"{users}{LOWERED}")] \
        if f"{users}{STD}" in frame.columns else []
    return frame.with_columns(*extra, lowered.alias(users))
