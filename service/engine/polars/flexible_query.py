"""POST /query: filter by and group by any combination of dimensions.

Output columns: the group_by dimensions in the requested order (geography as `<level>_id` and
`<level>_name`, time as `ts`), then suppressions, unique_users, events. No zero-filling: only
cells with events appear. An empty group_by gives exactly one row of totals.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.api.windows import TimeRange, window_range
from service.engine.polars.contributions import bucket_key, cell_contributions, key_guards
from service.engine.polars.slicing import bucket_parts, time_slice
from service.engine.polars.user_keys import known_bits
from service.engine.publication.query import TIME, canonical_query, family_cells, publish_query
from service.engine.requests import FILTER_COLUMNS, FlexibleQuery
from service.privacy import Contributions, Privacy, PrivacyParams
from service.privacy.meaning import Vocabulary
from service.store.reader import EventFrames


def _filters(filters: Mapping[str, tuple[str, ...]]) -> list[pl.Expr]:
    """One condition per filter key (all must hold), each true for any of that key's values."""
    return [pl.col(FILTER_COLUMNS[key]).is_in(list(values)) for key, values in filters.items()]


def query_cells(frames: EventFrames, window: TimeRange, req: FlexibleQuery,
                params: PrivacyParams) -> tuple[pl.DataFrame, Contributions]:
    """The cells of the suppressions in the window matching every filter, grouped by req.group_by,
    and the contributions behind them (`contributions.cell_contributions`)."""
    categorical = [dimension for dimension in req.group_by if dimension != TIME]
    sliced = time_slice(frames.suppressions, window)
    # A null in a grouped dimension is not a unit of it: those rows are left out of the groups
    # (but still count in totals, where nothing is grouped). One filter pass for everything.
    conditions = _filters(req.filters) + key_guards(sliced, categorical)
    # Grouped by time, the window is taken a few million rows at a time, cut between buckets:
    # no cell spans two parts, and the per-(cell, user) temporaries stay a part's size.
    parts = [sliced]
    keys: list[str | pl.Expr] = list(req.group_by)
    if TIME in req.group_by:
        assert req.bucket is not None, "grouped by time: a bucket (service/api/endpoints.py _check_query)"
        parts = bucket_parts(sliced, req.bucket)
        keys = [bucket_key(req.bucket) if dimension == TIME else dimension for dimension in req.group_by]
    rows = [part.lazy().filter(conditions) if conditions else part.lazy() for part in parts]
    return cell_contributions(rows, keys, params, user_bits=known_bits(frames))


def flexible_query(frames: EventFrames, as_of: dt.datetime, req: FlexibleQuery, privacy: Privacy,
                   noise: bool = False) -> pl.DataFrame:
    """Cells of the suppressions in the window matching every filter, grouped by req.group_by (with
    `noise`, also each measure's noise standard deviation, `<measure>_std`)."""
    if TIME in req.group_by and req.bucket is None:
        raise ValueError("a bucket is required to group by time")
    window = window_range(req.window, as_of)
    # The filters as their meaning, not their phrasing: the same events, described alike (one noise).
    req = canonical_query(frames, req, lambda columns: Vocabulary.of_frame(frames.suppressions, columns))
    cells, contributions = query_cells(frames, window, req, privacy.params)
    family = family_cells(frames, req, window, lambda relaxed: query_cells(frames, window, relaxed, privacy.params)[0])
    return publish_query(cells, contributions, window, frames.versions, req, privacy, noise, family)
