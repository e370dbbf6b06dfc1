"""The engine: typed requests in, aggregated and published polars frames out.

It knows polars and the event frames, not HTTP. Each method answers one endpoint from one
snapshot of the store, for one `as_of`, and passes every number through the privacy stage
exactly once. The interface (a request dataclass in, a frame with the endpoint's columns out)
is what another backend would implement.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import polars as pl

from service.engine.compare import bucket_mapper, with_previous
from service.engine.flexible_query import flexible_query
from service.engine.geo_heat import geo_heat
from service.engine.growth import CONFIDENCE_Z
from service.engine.intervals import with_intervals
from service.engine.keyword_activity import keyword_activity
from service.engine.noise import STD
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.engine.shapes import SHAPES
from service.engine.timeseries import domain_timeseries, keyword_timeseries
from service.engine.top_keywords import top_keywords
from service.engine.trending import trending
from service.periods import previous_as_of
from service.privacy import Privacy
from service.store.reader import EventFrames


class Engine:
    def __init__(self, privacy: Privacy, trending_confidence: float = CONFIDENCE_Z) -> None:
        """`trending_confidence`: how many standard deviations of noise and chance a trending value's
        growth must clear (engine/growth.py); 0 ranks by the plain growth of the shown numbers
        (tests of the arithmetic use it)."""
        self.privacy = privacy
        self.trending_confidence = trending_confidence

    def top_keywords(self, frames: EventFrames, as_of: dt.datetime, req: TopKeywords) -> pl.DataFrame:
        """keyword_raw, suppressions, users_est, rank."""
        return self._records(top_keywords, "top_keywords", frames, as_of, req)

    def keyword_timeseries(self, frames: EventFrames, as_of: dt.datetime, req: KeywordTimeseries) -> pl.DataFrame:
        """ts, suppressions, users_est, events; every bucket of the window, zero-filled."""
        return self._records(keyword_timeseries, "keyword_timeseries", frames, as_of, req)

    def domain_timeseries(self, frames: EventFrames, as_of: dt.datetime, req: DomainTimeseries) -> pl.DataFrame:
        """ts, suppressions, users_est, events; every bucket of the window, zero-filled."""
        return self._records(domain_timeseries, "domain_timeseries", frames, as_of, req)

    def geo_heat(self, frames: EventFrames, as_of: dt.datetime, req: GeoHeat) -> pl.DataFrame:
        """geo_key, label, suppressions, unique_users, keyword_count."""
        return self._records(geo_heat, "geo_heat", frames, as_of, req)

    def trending(self, frames: EventFrames, as_of: dt.datetime, req: Trending) -> pl.DataFrame:
        """value, recent, baseline, growth_pct."""
        return trending(frames, as_of, req, self.privacy, self.trending_confidence)

    def keyword_activity(self, frames: EventFrames, as_of: dt.datetime, req: KeywordActivity) -> pl.DataFrame:
        """keyword, adds, removes, edits, total_events, unique_users, net_adds."""
        return self._records(keyword_activity, "keyword_activity", frames, as_of, req)

    def query(self, frames: EventFrames, as_of: dt.datetime, req: FlexibleQuery) -> pl.DataFrame:
        """Dimension fields in group_by order, then suppressions, unique_users, events."""
        return self._records(flexible_query, "query", frames, as_of, req)

    def _records(self, compute: Callable[..., pl.DataFrame], name: str, frames: EventFrames, as_of: dt.datetime,
                 req: Any) -> pl.DataFrame:
        """The endpoint's records; with `compare`, each with `previous` and `change` (engine/compare.py);
        with `intervals`, each with `intervals` (engine/intervals.py). Without them, exactly as before."""
        if not (req.compare or req.intervals):
            return compute(frames, as_of, req, self.privacy)
        shape = SHAPES[name]
        records = compute(frames, as_of, req, self.privacy, noise=True)
        if req.compare:
            earlier = previous_as_of(req.window, as_of)
            previous = compute(frames, earlier, shape.widen(req), self.privacy, noise=True)
            bucket = getattr(req, "bucket", None)
            records = with_previous(records, previous, shape, shape.keys(req),
                                    bucket_mapper(req.window, as_of, bucket) if bucket else None)
        if req.intervals:
            records = with_intervals(records, shape, self.privacy.params)
        return records.drop(c for c in records.columns if c.endswith(STD))
