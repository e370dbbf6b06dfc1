"""POST /query's publication stage: the grouped cells -> the records.

Shared by both engines: the polars engine (engine/polars/) and the ClickHouse engine
(engine/clickhouse/) compute the cells their own way and publish them here.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping

import polars as pl

from service.engine.geo_labels import label_series
from service.engine.measures import CELL_MEASURES, as_strings, published
from service.engine.noise_std import std_columns
from service.engine.ordering import first_rows
from service.engine.requests import FILTER_COLUMNS, GEO_LEVELS, FlexibleQuery
from service.privacy import CellContext, Contributions, Privacy
from service.privacy.cells import family_dimension, family_in_frame
from service.store import schema
from service.windows import TimeRange

TIME = "time"


def _cell_column(dimension: str) -> str:
    """The column that identifies a cell for a group_by entry (`time` is the bucket start `ts`)."""
    return "ts" if dimension == TIME else dimension


def _output_columns(frame: pl.DataFrame, group_by: tuple[str, ...]) -> list[pl.Expr | pl.Series]:
    columns: list[pl.Expr | pl.Series] = []
    for dimension in group_by:
        if dimension in GEO_LEVELS:
            columns.append(pl.col(dimension).alias(f"{dimension}_id"))
            columns.append(label_series(f"{dimension}_name", dimension, frame.get_column(dimension)))
        else:
            columns.append(pl.col(_cell_column(dimension)))
    return columns + [pl.col(measure) for measure in CELL_MEASURES]


def _fixed(req: FlexibleQuery) -> dict[str, tuple[str, ...]]:
    """The filters as cell constraints: event column -> values."""
    return {FILTER_COLUMNS[key]: values for key, values in req.filters.items()}


def family_request(req: FlexibleQuery, window: TimeRange) -> FlexibleQuery | None:
    """The request whose cells are the family of req's cells (privacy.cells.family_dimension) when
    req's own cells are not all of it: req filtered on the family's dimension (one place, or a few
    places grouped by place). Then the same query without that filter, grouped by that dimension
    only; the engine computes its cells (not published) for the privacy stage. None otherwise."""
    dims = tuple(_cell_column(dimension) for dimension in req.group_by)
    fixed = _fixed(req)
    dimension = family_dimension(dims, fixed, window)
    if dimension is None or family_in_frame(dims, fixed, dimension):
        return None
    filters = {key: values for key, values in req.filters.items() if FILTER_COLUMNS[key] != dimension}
    return dataclasses.replace(req, filters=filters, group_by=(dimension,), bucket=None, compare=None, intervals=False)


def publish_query(cells: pl.DataFrame, contributions: Contributions, window: TimeRange,
                  versions: Mapping[str, Mapping[dt.date, int]], req: FlexibleQuery,
                  privacy: Privacy, noise: bool = False, family: pl.DataFrame | None = None) -> pl.DataFrame:
    """The publication stage of any engine: the cells of req.group_by (`cell_contributions`' shape;
    with no group_by one row, which may carry a key column of its own) -> the endpoint's frame.
    `family`: the cells of `family_request(req, window)` when it is not None."""
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
            fixed=_fixed(req),
        ),
        contributions,
        noise_std=noise,
        family=family,
    )
    # Ties break on the dimension values (ascending) so equal measures come back in a fixed order.
    ordered = first_rows(shown, [req.order_by, *dims], [req.order == "desc", *([False] * len(dims))], req.limit)
    return ordered.select(*_output_columns(ordered, req.group_by),
                          *std_columns(noise, {m: m for m in CELL_MEASURES}))
