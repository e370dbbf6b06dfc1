"""A noise layer per place for user counts (docs/privacy.md, "How it works", point 3).

Differencing two cells that differ by one small place — [town + S] minus [S] — isolates the town;
with independent noise per cell, averaging the differences over many real subsets S converges on
the town's exact count (issue 41, point 2: 32 subsets, the town's hourly users exact in 147 of 168
hours). So a cell restricted to places (grouped by a place, or filtered to a list of them) also
carries, on its user count, one draw per place it holds: seeded by the place, its level, the table
and the cell's range (with the time levels of `cells.time_levels`, no data version), and by nothing
else of the cell. Every cell that holds the town over the same range carries the town's same draw,
and the other places' draws cancel in a difference: the difference of [town + S] and [S] is the
town's count plus the town's draw, whatever S, and averaging cannot remove it.

The price: a cell restricted to k places has k layer draws more, s.d. `place_layer_std` each, on
its user count (a city alone: s.d. 2.0 instead of 1.4; 48 cities: about 10.5, against their
thousands of users). It is added noise, so each release is at least as private as without it. A
cell with layers is shown only when its noisy user count also stands `layer_min_sds` of its s.d.
above 0 (`Privacy._draw_counts`): with 48 places' layers an empty cell would otherwise pass k = 10
about one time in six.
"""

from __future__ import annotations

import math

import polars as pl

from service.privacy.cells import CellContext, Published, cell_seeds
from service.privacy.noise import draws, unit_noise
from service.privacy.params import UNIQUE_USERS, PrivacyParams
from service.store.schema import GEO_LEVELS


def _place_draws(key: bytes, places: pl.DataFrame, dimension: str, cell: CellContext, published: Published,
                 params: PrivacyParams) -> pl.Series:
    """A unit-variance draw per row of `places` (the place in `dimension`, and `ts` when the cell is
    bucketed): the place's layer over the row's range."""
    bucketed = "ts" in places.columns
    context = CellContext(table=f"{cell.table}|place", dims=(dimension, "ts") if bucketed else (dimension,),
                          published=(), time_range=published.period or cell.time_range,
                          bucket=cell.bucket if bucketed else None)
    plain = Published(column="", measure=UNIQUE_USERS, users="", period=published.period)
    # A place's draw is the same in every row of it: drawn once a distinct row, then gathered.
    distinct = places.unique()
    if distinct.height == places.height:
        return unit_noise(draws(key, cell_seeds(places, context, plain, params)), UNIQUE_USERS)
    drawn = distinct.with_columns(unit_noise(draws(key, cell_seeds(distinct, context, plain, params)),
                                             UNIQUE_USERS).alias("_z"))
    return places.join(drawn, on=places.columns, how="left", maintain_order="left", nulls_equal=True) \
        .get_column("_z")


def place_layers(key: bytes, frame: pl.DataFrame, cell: CellContext, published: Published,
                 params: PrivacyParams) -> tuple[pl.Series, pl.Series] | None:
    """Each row's place layer on its user count (Float64) and its variance, or None when the cell
    holds no restriction to places (or user counts are exact)."""
    if params.place_layer_std <= 0 or math.isinf(params.epsilon_users):
        return None
    bucketed = "ts" in cell.dims and published.period is None
    grouped = [d for d in cell.dims if d in GEO_LEVELS]
    filtered = {d: v for d, v in cell.fixed.items() if d in GEO_LEVELS and d not in cell.dims}
    filtered.update({d: (v,) for d, v in published.extra if d in GEO_LEVELS and d not in cell.dims})
    if not grouped and not filtered:
        return None
    total = pl.zeros(frame.height, dtype=pl.Float64, eager=True)
    count = 0.0
    for dimension in grouped:
        rows = frame.select(dimension, *(["ts"] if bucketed else []))
        total = total + _place_draws(key, rows, dimension, cell, published, params)
        count += 1.0
    for dimension, values in filtered.items():
        places = pl.DataFrame({dimension: sorted(set(values))}, schema={dimension: pl.String})
        if bucketed:
            spans = frame.select(pl.col("ts").unique())
            pairs = spans.join(places, how="cross")
            summed = pairs.with_columns(_place_draws(key, pairs, dimension, cell, published, params).alias("z")) \
                .group_by("ts").agg(pl.col("z").sum())
            total = total + frame.select("ts").join(summed, on="ts", how="left", maintain_order="left").get_column("z")
        else:
            total = total + _place_draws(key, places, dimension, cell, published, params).sum()
        count += places.height
    std = params.place_layer_std
    return total * std, pl.repeat(count * std * std, frame.height, dtype=pl.Float64, eager=True)
