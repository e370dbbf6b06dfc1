"""`compare=previous_period`: each record with its numbers in the period before.

The previous period has the window's length and ends where the window starts
(`periods.previous_as_of`). A record's `previous` holds its measures as the same request with
as_of moved back by one window publishes them for the same dimension value: the same cells, so,
the noise being fixed per cell, the very same numbers. The previous request is made without a
limit (and, for keyword activity, with every type), so a value that ranked lower then still finds
its numbers; a cell that is not published then (too few users, or no events) shows 0.

`change` holds, per measure, `pct` (100 x (current - previous) / |previous|, 2 decimals; null when
previous is 0) and `beyond_noise`: the change is larger than the privacy noise and chance of both
numbers can explain (growth.beyond_noise: trending's margins, added in quadrature).

For timeseries, a bucket's previous is the bucket one window earlier (`periods.previous_bucket`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import polars as pl

from service.api.periods import previous_bucket
from service.engine.growth import beyond_noise, round_like_python
from service.engine.noise_std import STD
from service.engine.shapes import RecordShape

PREVIOUS = "previous"
CHANGE = "change"
_PREV = "_previous_"  # prefix of the previous period's columns while they are joined


def with_previous(current: pl.DataFrame, previous: pl.DataFrame, shape: RecordShape, keys: tuple[str, ...],
                  ts_map: Callable[[dt.datetime], dt.datetime] | None = None) -> pl.DataFrame:
    """`current` with `previous` and `change` added. Both frames hold the keys, the measures and
    each measure's `<measure>_std`; `ts_map` gives a bucket's previous bucket (timeseries)."""
    measures = shape.measures
    earlier = previous.select(
        *keys,
        *(pl.col(m).alias(_PREV + m) for m in measures),
        *(pl.col(m + STD).alias(_PREV + m + STD) for m in measures),
        *(pl.col(c).alias(_PREV + c) for c in _chance_columns(shape) if c not in measures),
    )
    join_keys = list(keys)
    if ts_map is not None and "ts" in keys:
        mapping = {ts: ts_map(ts) for ts in current.get_column("ts").unique().to_list()}
        current = current.with_columns(
            pl.col("ts").replace_strict(mapping, return_dtype=current.schema["ts"]).alias(_PREV + "ts"))
        earlier = earlier.rename({"ts": _PREV + "ts"})
        join_keys = [_PREV + "ts" if k == "ts" else k for k in keys]
    if join_keys:
        joined = current.join(earlier, on=join_keys, how="left", maintain_order="left")
    else:  # one row of totals each
        joined = current.join(earlier, how="cross")
    # A cell not published then: 0, whose noise would have been of the current cell's scale.
    joined = joined.with_columns(
        *(pl.col(_PREV + m).fill_null(0) for m in measures),
        *(pl.col(_PREV + m + STD).fill_null(pl.col(m + STD)) for m in measures),
        *(pl.col(_PREV + c).fill_null(0) for c in _chance_columns(shape) if c not in measures),
    )
    height = joined.height
    changes = []
    for m in measures:
        now, then = pl.col(m).cast(pl.Float64), pl.col(_PREV + m).cast(pl.Float64)
        pct = round_like_python(100.0 * (now - then) / then.abs(), 2, height)
        chance_now = _chance(shape, m, "")
        chance_then = _chance(shape, m, _PREV)
        beyond = beyond_noise(now, then, current_chance=chance_now, previous_chance=chance_then,
                              current_std=pl.col(m + STD), previous_std=pl.col(_PREV + m + STD))
        changes.append(pl.struct(pl.when(then != 0).then(pct).otherwise(None).alias("pct"),
                                 beyond.alias("beyond_noise")).alias(m))
    result = joined.with_columns(
        pl.struct(pl.col(_PREV + m).alias(m) for m in measures).alias(PREVIOUS),
        pl.struct(changes).alias(CHANGE),
    )
    return result.drop(c for c in result.columns if c.startswith(_PREV))


def _chance_columns(shape: RecordShape) -> set[str]:
    return {c for parts in shape.chance.values() for c in parts}


def _chance(shape: RecordShape, measure: str, prefix: str) -> pl.Expr:
    """The count whose chance variation a measure has: itself, or the sum of its parts."""
    parts = shape.chance.get(measure)
    if parts is None:
        return pl.col(prefix + measure)
    return pl.sum_horizontal(pl.col(prefix + p) for p in parts)


def bucket_mapper(window: str, as_of: dt.datetime, bucket: str) -> Callable[[dt.datetime], dt.datetime]:
    """A bucket's previous bucket, for `with_previous`."""
    return lambda ts: previous_bucket(ts, window, as_of, bucket)
