"""compare and intervals around any engine's records: the one place both engines add `previous`,
`change` and `intervals` to an endpoint's records (engine/compare.py, engine/intervals.py)."""

from __future__ import annotations

import datetime as dt
from typing import Protocol, TypeVar

import polars as pl

from service.api.periods import previous_as_of
from service.engine.compare import bucket_mapper, with_previous
from service.engine.intervals import with_intervals
from service.engine.noise_std import STD
from service.engine.shapes import SHAPES
from service.privacy import Privacy


class Extendable(Protocol):
    """What compare and intervals read of a request (every request with records has them)."""

    @property
    def window(self) -> str: ...
    @property
    def compare(self) -> str | None: ...
    @property
    def intervals(self) -> bool: ...


SnapshotT = TypeVar("SnapshotT", contravariant=True)
RequestT = TypeVar("RequestT", bound=Extendable, contravariant=True)


class Compute(Protocol[SnapshotT, RequestT]):
    """An endpoint's records from one snapshot; with `noise`, each count's noise standard deviation
    too (`<field>_std`, engine/noise_std.py)."""

    def __call__(self, snapshot: SnapshotT, as_of: dt.datetime, req: RequestT, privacy: Privacy, /,
                 noise: bool = False) -> pl.DataFrame: ...


S = TypeVar("S")
R = TypeVar("R", bound=Extendable)


def records(compute: Compute[S, R], name: str, snapshot: S, as_of: dt.datetime, req: R,
            privacy: Privacy) -> pl.DataFrame:
    """Endpoint `name`'s records; with `compare`, each with `previous` and `change`; with
    `intervals`, each with `intervals`. Without them, exactly `compute`'s records."""
    if not (req.compare or req.intervals):
        return compute(snapshot, as_of, req, privacy)
    shape = SHAPES[name]
    found = compute(snapshot, as_of, req, privacy, noise=True)
    if req.compare:
        earlier = previous_as_of(req.window, as_of)
        wider: R = shape.widen(req)  # the same request for every cell (shapes.py)
        previous = compute(snapshot, earlier, wider, privacy, noise=True)
        bucket = getattr(req, "bucket", None)
        found = with_previous(found, previous, shape, shape.keys(req),
                              bucket_mapper(req.window, as_of, bucket) if bucket else None)
    if req.intervals:
        found = with_intervals(found, shape, privacy.params)
    return found.drop(c for c in found.columns if c.endswith(STD))
