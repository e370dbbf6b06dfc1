"""The polars engine: typed requests in, aggregated and published polars frames out.

It knows polars and the event frames, not HTTP. Each method answers one endpoint from one
snapshot of the store (`EventFrames`), for one `as_of`, and passes every number through the
privacy stage exactly once. It implements `service.engine.interface.QueryEngine`.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.engine import requests as rq
from service.engine.extras import records
from service.engine.growth import CONFIDENCE_Z
from service.engine.interface import QueryEngine
from service.engine.polars.counts import FrameCounts
from service.engine.polars.flexible_query import flexible_query
from service.engine.polars.geo_heat import geo_heat
from service.engine.polars.keyword_activity import keyword_activity
from service.engine.polars.timeseries import domain_timeseries, keyword_timeseries
from service.engine.polars.top_keywords import top_keywords
from service.engine.polars.trending import trending
from service.privacy import Privacy
from service.store.reader import EventFrames


class PolarsEngine(QueryEngine[EventFrames]):
    def __init__(self, privacy: Privacy, trending_confidence: float = CONFIDENCE_Z) -> None:
        """`trending_confidence`: how many standard deviations of noise and chance a trending value's
        growth must clear (engine/growth.py); 0 ranks by the plain growth of the shown numbers
        (tests of the arithmetic use it)."""
        self.privacy = privacy
        self.trending_confidence = trending_confidence

    def top_keywords(self, frames: EventFrames, as_of: dt.datetime, req: rq.TopKeywords) -> pl.DataFrame:
        """keyword_raw, suppressions, users_est, rank."""
        return records(top_keywords, "top_keywords", frames, as_of, req, self.privacy)

    def keyword_timeseries(self, frames: EventFrames, as_of: dt.datetime, req: rq.KeywordTimeseries) -> pl.DataFrame:
        """ts, suppressions, users_est, events; every bucket of the window, zero-filled."""
        return records(keyword_timeseries, "keyword_timeseries", frames, as_of, req, self.privacy)

    def domain_timeseries(self, frames: EventFrames, as_of: dt.datetime, req: rq.DomainTimeseries) -> pl.DataFrame:
        """ts, suppressions, users_est, events; every bucket of the window, zero-filled."""
        return records(domain_timeseries, "domain_timeseries", frames, as_of, req, self.privacy)

    def geo_heat(self, frames: EventFrames, as_of: dt.datetime, req: rq.GeoHeat) -> pl.DataFrame:
        """geo_key, label, suppressions, unique_users, keyword_count."""
        return records(geo_heat, "geo_heat", frames, as_of, req, self.privacy)

    def trending(self, frames: EventFrames, as_of: dt.datetime, req: rq.Trending) -> pl.DataFrame:
        """value, recent, baseline, growth_pct."""
        return trending(frames, as_of, req, self.privacy, self.trending_confidence)

    def keyword_activity(self, frames: EventFrames, as_of: dt.datetime, req: rq.KeywordActivity) -> pl.DataFrame:
        """keyword, adds, removes, edits, total_events, unique_users, net_adds."""
        return records(keyword_activity, "keyword_activity", frames, as_of, req, self.privacy)

    def query(self, frames: EventFrames, as_of: dt.datetime, req: rq.FlexibleQuery) -> pl.DataFrame:
        """Dimension fields in group_by order, then suppressions, unique_users, events."""
        return records(flexible_query, "query", frames, as_of, req, self.privacy)

    def counts(self, frames: EventFrames) -> FrameCounts:
        """The /query cost bound's counts over the in-memory frames."""
        return FrameCounts(frames)
