"""Serving from the release: a `QueryEngine` whose snapshots are generations of the release.

`ReleaseSource` follows the release's STATE (a new generation after every schedule run) and
loads it into a `Release` (windows.py) in the process that answers; `ReleaseSnapshot` is what a
request reads: its `last_event` is the last instant the release covers, so `as_of` never passes
the newest released hour. `ReleaseEngine` answers every operation from it (answers.py), adding
`compare=previous_period` (engine/compare.py, unchanged: the previous period's numbers are the
same release read one window earlier) and `intervals=true` (below).

Intervals of the release are the Gaussian's: a published count v with noise s.d. sd holds its
exact bounded value in [v - 1.645 sd, v + 1.645 sd] 90 % of the time (a sum's exact value before
bounding may be higher: docs/privacy.md "The bounds").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from service.api.periods import previous_as_of
from service.engine import requests as rq
from service.engine.compare import bucket_mapper, with_previous
from service.engine.growth import CONFIDENCE_Z
from service.engine.shapes import SHAPES
from service.release import answers
from service.release.estimates import STD
from service.release.storage import ReleaseStore
from service.release.windows import Release

Z90 = 1.6448536269514722
INTERVALS = "intervals"


@dataclasses.dataclass(frozen=True, eq=False)
class ReleaseSnapshot:
    """One generation of the release, as a request reads it (compared and hashed by identity)."""

    release: Release

    @property
    def generation(self) -> int:
        return self.release.generation

    @property
    def last_event(self) -> dt.datetime | None:
        through = self.release.through
        return None if through is None else through - dt.timedelta(microseconds=1)

    @property
    def first_event(self) -> dt.datetime | None:
        starts = [v.rows.get_column("start").min() for v in self.release.views.values() if v.rows.height]
        return min(starts) if starts else None  # type: ignore[type-var,return-value]

    @functools.cached_property
    def versions(self) -> Mapping[str, Mapping[dt.date, int]]:
        """Every released date at one version named by the release key: a released node never
        changes, so an answer for a past as_of stays valid across generations, until a rebuild
        under another secret (a new key) makes it another answer (its cache key changes)."""
        first, through = self.first_event, self.release.through
        if first is None or through is None:
            return {}
        epoch = int(self.release.key[:7] or "0", 16) + 1
        day, last, dates = first.date(), through.date(), {}
        while day <= last:
            dates[day] = epoch
            day += dt.timedelta(days=1)
        return {"release": dates}


class ReleaseSource:
    """The release of a data directory, reloaded when a schedule run publishes a new generation."""

    def __init__(self, data_dir: Path, *, check_interval: float = 1.0) -> None:
        self.store = ReleaseStore(data_dir)
        self._check_interval = check_interval
        self._snapshot: ReleaseSnapshot | None = None
        self._checked = 0.0
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._snapshot is not None

    def snapshot(self) -> ReleaseSnapshot:
        now = time.monotonic()
        current = self._snapshot
        if current is not None and now - self._checked < self._check_interval:
            return current
        with self._lock:
            self._checked = now
            generation = self.store.generation
            if self._snapshot is None or self._snapshot.generation != generation:
                self._snapshot = ReleaseSnapshot(Release.load(self.store))
            return self._snapshot


Compute = Callable[[Release, dt.datetime, Any, bool], pl.DataFrame]


def with_intervals(records: pl.DataFrame, measures: tuple[str, ...]) -> pl.DataFrame:
    """`records` with `intervals`: per count, [low, high] from its noise s.d. (`<count>_std`)."""
    bounds = []
    for m in measures:
        value, sd = pl.col(m).cast(pl.Float64), pl.col(m + STD).fill_null(0.0)
        bounds.append(pl.concat_list((value - Z90 * sd).clip(lower_bound=0).floor().cast(pl.Int64),
                                     (value + Z90 * sd).ceil().cast(pl.Int64)).alias(m))
    return records.with_columns(pl.struct(bounds).alias(INTERVALS))


class ReleaseEngine:
    """The six GETs and /query, read from the release (a `QueryEngine[ReleaseSnapshot]`)."""

    def __init__(self, trending_confidence: float = CONFIDENCE_Z) -> None:
        self.trending_confidence = trending_confidence
        self.privacy = None  # nothing is published by a privacy stage here: the release did it

    def _records(self, compute: Compute, name: str, snapshot: ReleaseSnapshot, as_of: dt.datetime,
                 req: Any) -> pl.DataFrame:
        release = snapshot.release
        if not (req.compare or req.intervals):
            return compute(release, as_of, req, False)
        shape = SHAPES[name]
        found = compute(release, as_of, req, True)
        if req.compare:
            earlier = previous_as_of(req.window, as_of)
            previous = compute(release, earlier, shape.widen(req), True)
            bucket = getattr(req, "bucket", None)
            found = with_previous(found, previous, shape, shape.keys(req),
                                  bucket_mapper(req.window, as_of, bucket) if bucket else None)
        if req.intervals:
            found = with_intervals(found, shape.measures)
        return found.drop(c for c in found.columns if c.endswith(STD))

    def top_keywords(self, snapshot: ReleaseSnapshot, as_of: dt.datetime, req: rq.TopKeywords) -> pl.DataFrame:
        return self._records(answers.top_keywords, "top_keywords", snapshot, as_of, req)

    def keyword_timeseries(self, snapshot: ReleaseSnapshot, as_of: dt.datetime,
                           req: rq.KeywordTimeseries) -> pl.DataFrame:
        return self._records(answers.keyword_timeseries, "keyword_timeseries", snapshot, as_of, req)

    def domain_timeseries(self, snapshot: ReleaseSnapshot, as_of: dt.datetime,
                          req: rq.DomainTimeseries) -> pl.DataFrame:
        return self._records(answers.domain_timeseries, "domain_timeseries", snapshot, as_of, req)

    def geo_heat(self, snapshot: ReleaseSnapshot, as_of: dt.datetime, req: rq.GeoHeat) -> pl.DataFrame:
        return self._records(answers.geo_heat, "geo_heat", snapshot, as_of, req)

    def trending(self, snapshot: ReleaseSnapshot, as_of: dt.datetime, req: rq.Trending) -> pl.DataFrame:
        return answers.trending(snapshot.release, as_of, req, self.trending_confidence)

    def keyword_activity(self, snapshot: ReleaseSnapshot, as_of: dt.datetime,
                         req: rq.KeywordActivity) -> pl.DataFrame:
        return self._records(answers.keyword_activity, "keyword_activity", snapshot, as_of, req)

    def query(self, snapshot: ReleaseSnapshot, as_of: dt.datetime, req: rq.FlexibleQuery) -> pl.DataFrame:
        return self._records(answers.query, "query", snapshot, as_of, req)

    def counts(self, snapshot: ReleaseSnapshot) -> ReleaseCounts:
        del snapshot
        return ReleaseCounts()


class ReleaseCounts:
    """The /query cost bound's counts for the release: a released table is read whole, so the
    bound counts its public domain, never the store (whose counts would tell who is in it)."""

    def grouped_rows(self, window: Any, filters: Mapping[str, tuple[str, ...]], grouped: list[str]) -> int:
        del window, filters, grouped
        return 0

    def factor(self, dimensions: tuple[str, ...], days: tuple[int, int],
               filters: Mapping[str, tuple[str, ...]]) -> Any:
        from service.engine.cost import Factor
        from service.release import domains

        del days, filters
        size = 1
        for dimension in dimensions:
            size *= len(domains.values(dimension))
        return Factor(dimensions, size)
