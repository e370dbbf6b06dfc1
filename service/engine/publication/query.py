"""POST /query's publication stage: the grouped cells -> the records.

Shared by both engines: the polars engine (engine/polars/) and the ClickHouse engine
(engine/clickhouse/) compute the cells their own way and publish them here.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl
import polars.selectors as cs

from service.api.windows import TimeRange
from service.engine.geo_labels import label_series
from service.engine.measures import CELL_MEASURES, EVENTS, SUPPRESSIONS, UNIQUE_USERS, as_strings, published
from service.engine.noise_std import std_columns
from service.engine.ordering import first_rows
from service.engine.publication.reconcile import users_within_counts
from service.engine.requests import FILTER_COLUMNS, GEO_LEVELS, FlexibleQuery
from service.privacy import CellContext, Contributions, Privacy
from service.privacy.cells import family_dimension, family_in_frame
from service.privacy.meaning import Vocabulary, canonical_filters
from service.store import schema

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


# Per snapshot (compared by identity; dropped with it): what the store holds, for canonical_query.
_VOCABULARIES: weakref.WeakKeyDictionary[Any, Vocabulary] = weakref.WeakKeyDictionary()
_VOCABULARIES_LOCK = threading.Lock()


def canonical_query(snapshot: Any, req: FlexibleQuery, build: Callable[[tuple[str, ...]], Vocabulary]) -> FlexibleQuery:
    """req with its filters in their canonical form (privacy.meaning.canonical_filters): the same
    events, so the same exact numbers, described alike however they were phrased, so the same noise.
    `build(columns)` reads the store's vocabulary of the filtered columns, once per snapshot."""
    if not req.filters:
        return req
    with _VOCABULARIES_LOCK:
        vocabulary = _VOCABULARIES.get(snapshot)
    if vocabulary is None:
        vocabulary = build(tuple(FILTER_COLUMNS.values()))
        with _VOCABULARIES_LOCK:
            _VOCABULARIES[snapshot] = vocabulary
    canonical = canonical_filters(_fixed(req), vocabulary)
    keys = {column: key for key, column in FILTER_COLUMNS.items()}
    return dataclasses.replace(req, filters=dict(sorted((keys[column], values) for column, values in canonical.items())))


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


# Per snapshot (compared by identity; dropped with it): family request -> its cells' totals, and
# a lock per family so that requests of one place each, arriving together (a sheet refreshing at
# the hour turn), compute it once and the others wait for it.
_FAMILIES: weakref.WeakKeyDictionary[Any, dict[tuple, pl.DataFrame]] = weakref.WeakKeyDictionary()
_FAMILY_LOCKS: weakref.WeakKeyDictionary[Any, dict[tuple, threading.Lock]] = weakref.WeakKeyDictionary()
_FAMILIES_LOCK = threading.Lock()
_FAMILIES_KEPT = 256  # families kept per snapshot (a few hundred bytes each)


def family_cells(snapshot: Any, req: FlexibleQuery, window: TimeRange,
                 compute: Callable[[FlexibleQuery], pl.DataFrame]) -> pl.DataFrame | None:
    """What `publish_query` takes as `family`: None when req needs none (`family_request`), else the
    totals of the family's cells (one row, each count summed), from `compute(family request)` (the
    engine's cells of that request) once per snapshot and family, however many requests ask for it
    at once. A sheet that asks for one place a cell asks for the same family in every cell: the
    level's cells are grouped once, not each time (a city over 90 days at 10M events: 329 ms with
    its family grouped, 14 ms after; forty cities at once 0.73 s, 12.6 s without the lock:
    bench/bench_family.py)."""
    relaxed = family_request(req, window)
    if relaxed is None:
        return None
    key = (window.start, window.end, tuple(sorted(relaxed.filters.items())), relaxed.group_by)
    with _FAMILIES_LOCK:
        found = _FAMILIES.get(snapshot, {}).get(key)
        lock = _FAMILY_LOCKS.setdefault(snapshot, {}).setdefault(key, threading.Lock()) if found is None else None
    if found is not None:
        return found
    assert lock is not None
    with lock:  # one computes; the others find its answer
        with _FAMILIES_LOCK:
            found = _FAMILIES.get(snapshot, {}).get(key)
        if found is None:
            found = compute(relaxed).select(cs.numeric().sum())
            with _FAMILIES_LOCK:
                kept = _FAMILIES.setdefault(snapshot, {})
                if len(kept) >= _FAMILIES_KEPT:
                    kept.pop(next(iter(kept)))
                kept[key] = found
                _FAMILY_LOCKS.get(snapshot, {}).pop(key, None)
    return found


def publish_query(cells: pl.DataFrame, contributions: Contributions, window: TimeRange,
                  versions: Mapping[str, Mapping[dt.date, int]], req: FlexibleQuery,
                  privacy: Privacy, noise: bool = False, family: pl.DataFrame | None = None) -> pl.DataFrame:
    """The publication stage of any engine: the cells of req.group_by (`cell_contributions`' shape;
    with no group_by one row, which may carry a key column of its own) -> the endpoint's frame.
    `family`: `family_cells(...)`, the family's cells when req's are not all of it."""
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
    shown = users_within_counts(shown, UNIQUE_USERS, [SUPPRESSIONS, EVENTS])
    # Ties break on the dimension values (ascending) so equal measures come back in a fixed order.
    ordered = first_rows(shown, [req.order_by, *dims], [req.order == "desc", *([False] * len(dims))], req.limit,
                         req.offset)
    return ordered.select(*_output_columns(ordered, req.group_by),
                          *std_columns(noise, {m: m for m in CELL_MEASURES}, shown.columns))
