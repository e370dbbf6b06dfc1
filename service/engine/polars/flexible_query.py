"""POST /query: filter by and group by any combination of dimensions.

Output columns: the group_by dimensions in the requested order (geography as `<level>_id` and
`<level>_name`, time as `ts`), then suppressions, unique_users, events. No zero-filling: only
cells with events appear. An empty group_by gives exactly one row of totals.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.engine.geo_labels import label_series
from service.engine.measures import CELL_MEASURES, as_strings, bucket_key, cell_contributions, key_guards, published
from service.engine.noise_std import std_columns
from service.engine.ordering import first_rows
from service.engine.polars.slicing import bucket_parts, time_slice
from service.engine.requests import FILTER_COLUMNS, GEO_LEVELS, FlexibleQuery
from service.privacy import CellContext, Contributions, Privacy
from service.store import schema
from service.store.reader import EventFrames
from service.windows import TimeRange, window_range

TIME = "time"


def _cell_column(dimension: str) -> str:
    """The column that identifies a cell for a group_by entry (`time` is the bucket start `ts`)."""
    return "ts" if dimension == TIME else dimension


def _filters(filters: Mapping[str, tuple[str, ...]]) -> list[pl.Expr]:
    """One condition per filter key (all must hold), each true for any of that key's values."""
    return [pl.col(FILTER_COLUMNS[key]).is_in(list(values)) for key, values in filters.items()]


def _output_columns(frame: pl.DataFrame, group_by: tuple[str, ...]) -> list[pl.Expr | pl.Series]:
    columns: list[pl.Expr | pl.Series] = []
    for dimension in group_by:
        if dimension in GEO_LEVELS:
            columns.append(pl.col(dimension).alias(f"{dimension}_id"))
            columns.append(label_series(f"{dimension}_name", dimension, frame.get_column(dimension)))
        else:
            columns.append(pl.col(_cell_column(dimension)))
    return columns + [pl.col(measure) for measure in CELL_MEASURES]


def flexible_query(frames: EventFrames, as_of: dt.datetime, req: FlexibleQuery, privacy: Privacy,
                   noise: bool = False) -> pl.DataFrame:
    """Cells of the suppressions in the window matching every filter, grouped by req.group_by (with
    `noise`, also each measure's noise standard deviation, `<measure>_std`)."""
    if TIME in req.group_by and req.bucket is None:
        raise ValueError("a bucket is required to group by time")
    window = window_range(req.window, as_of)
    categorical = [dimension for dimension in req.group_by if dimension != TIME]
    sliced = time_slice(frames.suppressions, window)
    # A null in a grouped dimension is not a unit of it: those rows are left out of the groups
    # (but still count in totals, where nothing is grouped). One filter pass for everything.
    conditions = _filters(req.filters) + key_guards(sliced, categorical)
    # Grouped by time, the window is taken a few million rows at a time, cut between buckets:
    # no cell spans two parts, and the per-(cell, user) temporaries stay a part's size.
    parts = bucket_parts(sliced, req.bucket) if TIME in req.group_by else [sliced]
    rows = [part.lazy().filter(conditions) if conditions else part.lazy() for part in parts]
    keys = [bucket_key(req.bucket) if dimension == TIME else dimension for dimension in req.group_by]
    cells, contributions = cell_contributions(rows, keys, privacy.params)  # no keys: one row of totals
    return publish_query(cells, contributions, window, frames.versions, req, privacy, noise)


def publish_query(cells: pl.DataFrame, contributions: Contributions, window: TimeRange,
                  versions: Mapping[str, Mapping[dt.date, int]], req: FlexibleQuery,
                  privacy: Privacy, noise: bool = False) -> pl.DataFrame:
    """The publication stage of any engine: the cells of req.group_by (`cell_contributions`' shape;
    with no group_by one row, which may carry a key column of its own) -> the endpoint's frame."""
    dims = tuple(_cell_column(dimension) for dimension in req.group_by)
    categorical = [dimension for dimension in req.group_by if dimension != TIME]
    shown = privacy.publish(
        as_strings(cells, categorical),
        CellContext(
            table=schema.SUPPRESSIONS,
            dims=dims,
            # With no group_by the answer is one row of totals, always: shown as zeros when suppressed.
            published=published(*CELL_MEASURES, when_suppressed="drop" if req.group_by else "zero"),
            time_range=window,
            versions=versions.get(schema.SUPPRESSIONS, {}),
            bucket=req.bucket if TIME in req.group_by else None,
            # Filters are part of a cell's identity: platform in {chrome} is another cell than all platforms.
            fixed={FILTER_COLUMNS[key]: values for key, values in req.filters.items()},
        ),
        contributions,
        noise_std=noise,
    )
    # Ties break on the dimension values (ascending) so equal measures come back in a fixed order.
    ordered = first_rows(shown, [req.order_by, *dims], [req.order == "desc", *([False] * len(dims))], req.limit)
    return ordered.select(*_output_columns(ordered, req.group_by),
                          *std_columns(noise, {m: m for m in CELL_MEASURES}))
