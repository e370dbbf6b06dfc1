"""compare and intervals around any engine's records: the one place both engines add `previous`,
`change` and `intervals` to an endpoint's records (engine/compare.py, engine/intervals.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import polars as pl

from service.api.periods import previous_as_of
from service.engine.compare import bucket_mapper, with_previous
from service.engine.intervals import with_intervals
from service.engine.noise_std import STD
from service.engine.shapes import SHAPES
from service.privacy import Privacy

# An endpoint's records from one snapshot: (snapshot, as_of, request, privacy, noise=) -> frame;
# with `noise`, each count's noise standard deviation too (`<field>_std`, engine/noise_std.py).
Compute = Callable[..., pl.DataFrame]


def records(compute: Compute, name: str, snapshot: Any, as_of: dt.datetime, req: Any,
            privacy: Privacy) -> pl.DataFrame:
    """Endpoint `name`'s records; with `compare`, each with `previous` and `change`; with
    `intervals`, each with `intervals`. Without them, exactly `compute`'s records."""
    if not (req.compare or req.intervals):
        return compute(snapshot, as_of, req, privacy)
    shape = SHAPES[name]
    found = compute(snapshot, as_of, req, privacy, noise=True)
    if req.compare:
        earlier = previous_as_of(req.window, as_of)
        previous = compute(snapshot, earlier, shape.widen(req), privacy, noise=True)
        bucket = getattr(req, "bucket", None)
        found = with_previous(found, previous, shape, shape.keys(req),
                              bucket_mapper(req.window, as_of, bucket) if bucket else None)
    if req.intervals:
        found = with_intervals(found, shape, privacy.params)
    return found.drop(c for c in found.columns if c.endswith(STD))
