"""The engine: typed requests in, aggregated and published polars frames out.

It knows polars and the event frames, not HTTP. Each method answers one endpoint from one
snapshot of the store, for one `as_of`, and passes every number through the privacy stage
exactly once. The interface (a request dataclass in, a frame with the endpoint's columns out)
is what another backend would implement.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.engine.flexible_query import flexible_query
from service.engine.geo_heat import geo_heat
from service.engine.growth import CONFIDENCE_Z
from service.engine.keyword_activity import keyword_activity
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.engine.timeseries import domain_timeseries, keyword_timeseries
from service.engine.top_keywords import top_keywords
from service.engine.trending import trending
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
        return top_keywords(frames, as_of, req, self.privacy)

    def keyword_timeseries(self, frames: EventFrames, as_of: dt.datetime, req: KeywordTimeseries) -> pl.DataFrame:
        """ts, suppressions, users_est, events; every bucket of the window, zero-filled."""
        return keyword_timeseries(frames, as_of, req, self.privacy)

    def domain_timeseries(self, frames: EventFrames, as_of: dt.datetime, req: DomainTimeseries) -> pl.DataFrame:
        """ts, suppressions, users_est, events; every bucket of the window, zero-filled."""
        return domain_timeseries(frames, as_of, req, self.privacy)

    def geo_heat(self, frames: EventFrames, as_of: dt.datetime, req: GeoHeat) -> pl.DataFrame:
        """geo_key, label, suppressions, unique_users, keyword_count."""
        return geo_heat(frames, as_of, req, self.privacy)

    def trending(self, frames: EventFrames, as_of: dt.datetime, req: Trending) -> pl.DataFrame:
        """value, recent, baseline, growth_pct."""
        return trending(frames, as_of, req, self.privacy, self.trending_confidence)

    def keyword_activity(self, frames: EventFrames, as_of: dt.datetime, req: KeywordActivity) -> pl.DataFrame:
        """keyword, adds, removes, edits, total_events, unique_users, net_adds."""
        return keyword_activity(frames, as_of, req, self.privacy)

    def query(self, frames: EventFrames, as_of: dt.datetime, req: FlexibleQuery) -> pl.DataFrame:
        """Dimension fields in group_by order, then suppressions, unique_users, events."""
        return flexible_query(frames, as_of, req, self.privacy)
