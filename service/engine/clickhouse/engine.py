"""The engine on ClickHouse: `service.engine.interface.QueryEngine` over a `ClickHouseSnapshot`
(service/clickhouse/store.py), where the polars engine takes `EventFrames`.

ClickHouse computes what grows with the events (scanning, the per-user stage, the per-cell stage:
`cells.Query`, one round trip per endpoint); polars and the shared publication stage of each endpoint
(`publish_*`, the privacy stage, ordering and shaping) do the rest, so the same cells get the same
noise and the same rows come out, byte for byte, as from the polars engine.
"""

from __future__ import annotations

import datetime as dt
from typing import cast

import polars as pl

from service.api.windows import TimeRange, trending_periods, window_range
from service.clickhouse.store import ClickHouseSnapshot
from service.engine.clickhouse.cells import SUPPRESSION_MEASURES, Query, cells, filter_conditions, time_literal
from service.engine.clickhouse.contributions import HeavyTotals
from service.engine.clickhouse.counts import ClickHouseCounts
from service.engine.clickhouse.keys import Key, dimension, flag, time_bucket
from service.engine.clickhouse.keywords import keyword_count
from service.engine.extras import records
from service.engine.growth import CONFIDENCE_Z
from service.engine.interface import QueryEngine
from service.engine.measures import UNIQUE_USERS
from service.engine.publication.geo_heat import KEYWORD_COUNT, publish_geo_heat
from service.engine.publication.keyword_activity import ACTION_COUNTS, publish_keyword_activity
from service.engine.publication.query import TIME, canonical_query, family_cells, publish_query
from service.engine.publication.timeseries import publish_timeseries
from service.engine.publication.top_keywords import publish_top_keywords
from service.engine.publication.trending import BASELINE, RECENT, publish_trending
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.privacy import PILOT, Contributions, Privacy
from service.privacy.meaning import Vocabulary
from service.store import schema

RECENT_KEY = "_recent"


class ClickHouseEngine(QueryEngine[ClickHouseSnapshot]):
    """Each endpoint's cells computed in ClickHouse; compare and intervals as the polars engine adds
    them (engine/extras.py)."""

    def __init__(self, privacy: Privacy, trending_confidence: float = CONFIDENCE_Z) -> None:
        """`trending_confidence`: as the polars engine's (engine/growth.py)."""
        self.privacy = privacy
        self.trending_confidence = trending_confidence

    def top_keywords(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: TopKeywords) -> pl.DataFrame:
        return records(self._top_keywords, "top_keywords", snapshot, as_of, req, self.privacy)

    def keyword_timeseries(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime,
                           req: KeywordTimeseries) -> pl.DataFrame:
        return records(self._keyword_timeseries, "keyword_timeseries", snapshot, as_of, req, self.privacy)

    def domain_timeseries(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime,
                          req: DomainTimeseries) -> pl.DataFrame:
        return records(self._domain_timeseries, "domain_timeseries", snapshot, as_of, req, self.privacy)

    def geo_heat(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: GeoHeat) -> pl.DataFrame:
        return records(self._geo_heat, "geo_heat", snapshot, as_of, req, self.privacy)

    def keyword_activity(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: KeywordActivity) -> pl.DataFrame:
        return records(self._keyword_activity, "keyword_activity", snapshot, as_of, req, self.privacy)

    def query(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: FlexibleQuery) -> pl.DataFrame:
        return records(self._query, "query", snapshot, as_of, req, self.privacy)

    def counts(self, snapshot: ClickHouseSnapshot) -> ClickHouseCounts:
        """The /query cost bound's counts, in SQL."""
        return ClickHouseCounts(snapshot)

    # Each endpoint's records (with `noise`, each count's noise standard deviation too), in the
    # signature engine/extras.py `records` calls: (snapshot, as_of, request, privacy, noise=).

    def _top_keywords(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: TopKeywords, privacy: Privacy,
                      noise: bool = False) -> pl.DataFrame:
        window = window_range(req.window, as_of)
        found, contributions = cells(snapshot, Query(schema.SUPPRESSIONS, [dimension("keyword")], window),
                                     privacy.params)
        return publish_top_keywords(found, contributions, window, snapshot.versions, req, privacy, noise)

    def _keyword_timeseries(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: KeywordTimeseries,
                            privacy: Privacy, noise: bool = False) -> pl.DataFrame:
        return self._timeseries(snapshot, as_of, "keyword", req.keyword, req.window, req.bucket, noise)

    def _domain_timeseries(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: DomainTimeseries,
                           privacy: Privacy, noise: bool = False) -> pl.DataFrame:
        return self._timeseries(snapshot, as_of, "domain", req.domain, req.window, req.bucket, noise)

    def _timeseries(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, column: str, value: str,
                    window_name: str, bucket: str, noise: bool = False) -> pl.DataFrame:
        window = window_range(window_name, as_of)
        query = Query(schema.SUPPRESSIONS, [time_bucket(bucket)], window,
                      where=[f"{column} = {{value:String}}"], parameters={"value": value})
        counts, contributions = cells(snapshot, query, self.privacy.params)
        return publish_timeseries(counts, contributions, column, value, window, bucket, snapshot.versions,
                                  self.privacy, noise)

    def _geo_heat(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: GeoHeat, privacy: Privacy,
                  noise: bool = False) -> pl.DataFrame:
        window = window_range(req.window, as_of)
        level = req.level
        # Each user's first keyword_rows_per_user rows (by time) bring their keywords, as in the
        # polars engine (engine/polars/geo_heat.py): distinct keywords counted over those (keywords.py).
        per_user, per_cell = keyword_count(snapshot, self.privacy.params.keyword_rows_per_user, "_keywords")
        query = Query(
            schema.SUPPRESSIONS, [dimension(level, not_null=True)], window, where=[f"isNotNull({level})"],
            per_user_extra=[per_user], per_cell_extra=[f"toInt64({per_cell}) AS {KEYWORD_COUNT}"],
        )
        found, contributions = cells(snapshot, query, self.privacy.params)
        return publish_geo_heat(found, contributions, level, window, snapshot.versions, self.privacy, noise)

    def trending(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: Trending) -> pl.DataFrame:
        periods = trending_periods(req.window, as_of)
        split = periods.recent.start
        whole = TimeRange(periods.baseline.start, periods.recent.end)
        # unique_users needs no sums: the users per cell are all it takes; otherwise the one summed.
        measures = {} if req.metric == UNIQUE_USERS else {req.metric: SUPPRESSION_MEASURES[req.metric]}
        query = Query(schema.SUPPRESSIONS, [dimension(req.dimension), flag(RECENT_KEY, f"ts >= {time_literal(split)}")],
                      whole, measures=measures)
        found, contributions = cells(snapshot, query, self.privacy.params)
        recent = self._period(found, req, True, RECENT)
        baseline = self._period(found, req, False, BASELINE)
        # Both periods' contributions (the shape polars' trending joins them in): the period key
        # split into a column per period.
        both = None if req.metric == UNIQUE_USERS else \
            cast(HeavyTotals, contributions).split(RECENT_KEY, {RECENT: 1, BASELINE: 0}, req.metric)
        return publish_trending(recent, baseline, both, snapshot.versions, as_of, req, self.privacy,
                                self.trending_confidence)

    @staticmethod
    def _period(found: pl.DataFrame, req: Trending, recent: bool, name: str) -> pl.DataFrame:
        """One period's cells in the shape `publish_trending` takes."""
        dim = req.dimension
        rows = found.filter(pl.col(RECENT_KEY) == int(recent))
        users = pl.col(UNIQUE_USERS).alias(f"{name}_users")
        if req.metric == UNIQUE_USERS:
            return rows.select(dim, pl.col(UNIQUE_USERS).alias(name), users)
        return rows.select(dim, pl.col(f"{req.metric}{PILOT}").alias(f"{name}{PILOT}"), users)

    def _keyword_activity(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: KeywordActivity,
                          privacy: Privacy, noise: bool = False) -> pl.DataFrame:
        window = window_range(req.window, as_of)
        measures = {name: f"toInt64(countIf(action = '{action}'))" for name, action in ACTION_COUNTS.items()}
        query = Query(schema.KEYWORD_CHANGES, [dimension("keyword")], window, measures=measures,
                      per_cell_extra=[f"toInt64(countIf(_m_{name} > 0)) AS {name}_users" for name in ACTION_COUNTS])
        found, contributions = cells(snapshot, query, self.privacy.params)
        return publish_keyword_activity(found, contributions, window, snapshot.versions, req, self.privacy, noise)

    def _query(self, snapshot: ClickHouseSnapshot, as_of: dt.datetime, req: FlexibleQuery, privacy: Privacy,
               noise: bool = False) -> pl.DataFrame:
        if TIME in req.group_by and req.bucket is None:
            raise ValueError("a bucket is required to group by time")
        window = window_range(req.window, as_of)
        req = canonical_query(snapshot, req, lambda columns: _vocabulary(snapshot, columns))
        found, contributions = self._query_cells(snapshot, window, req)
        family = family_cells(snapshot, req, window, lambda relaxed: self._query_cells(snapshot, window, relaxed)[0])
        return publish_query(found, contributions, window, snapshot.versions, req, self.privacy, noise, family)

    def _query_cells(self, snapshot: ClickHouseSnapshot, window: TimeRange,
                     req: FlexibleQuery) -> tuple[pl.DataFrame, Contributions]:
        where, parameters = filter_conditions(req.filters)
        keys: list[Key] = []
        for dim in req.group_by:
            if dim == TIME:
                assert req.bucket is not None
                keys.append(time_bucket(req.bucket))
            else:
                # A null in a grouped dimension is not a unit of it (contributions.key_guards).
                where.append(f"isNotNull({dim})")
                keys.append(dimension(dim, not_null=True))
        return cells(snapshot, Query(schema.SUPPRESSIONS, keys, window, where, parameters), self.privacy.params)


def _vocabulary(snapshot: ClickHouseSnapshot, columns: tuple[str, ...]) -> Vocabulary:
    """What the stored suppressions hold (privacy.meaning.Vocabulary), in SQL: each column's distinct
    values and whether it has a null, and the distinct combinations of the geographic columns."""
    rows = f"FROM {schema.SUPPRESSIONS} WHERE generation <= {int(snapshot.generation)}"
    values, nulls = {}, set()
    for column in columns:
        found = snapshot.ch.frame(f"SELECT DISTINCT toString({column}) AS v {rows} AND isNotNull({column})")
        values[column] = frozenset(found.get_column("v").to_list())
        if snapshot.ch.frame(f"SELECT count() AS n {rows} AND isNull({column})").item() > 0:
            nulls.add(column)
    geo = ", ".join(f"toNullable(toString({level})) AS {level}" for level in schema.GEO_LEVELS)
    places = snapshot.ch.frame(f"SELECT DISTINCT {geo} {rows}")
    return Vocabulary(values=values, nulls=frozenset(nulls),
                      places=places.select(pl.col(level).cast(pl.String) for level in schema.GEO_LEVELS))
