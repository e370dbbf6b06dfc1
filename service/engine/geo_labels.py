"""Display labels of geographic keys (ISO codes, FIPS, GeoNames ids), for output rows only."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl


def geo_labels(level: str, keys: Sequence[str]) -> list[str]:
    """`service.geo.labels`: one label per key, in order (an unknown key is its own label)."""
    if not keys:
        return []
    # Imported on first use: the reference data is built in the worker that answers, never at
    # import time in the gunicorn master.
    from service.geo import labels

    return list(labels(level, keys))


def label_series(name: str, level: str, keys: pl.Series) -> pl.Series:
    """`geo_labels` of the keys of an output frame, as a String column called `name`."""
    return pl.Series(name, geo_labels(level, keys.to_list()), dtype=pl.String)
