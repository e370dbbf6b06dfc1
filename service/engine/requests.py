"""Validated, typed requests handed to the engine. The HTTP layer builds these from the
parameter table; the engine never sees raw query strings or JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from service.store import schema

# /query filter keys -> event column they filter
FILTER_COLUMNS: dict[str, str] = {
    "keywords": "keyword",
    "domains": "domain",
    "platforms": "platform",
    "page_contexts": "page_context",
    "countries": "country",
    "regions": "region",
    "counties": "county",
    "cities": "city",
}

GEO_LEVELS = schema.GEO_LEVELS
GROUP_BY_DIMENSIONS = ("keyword", "domain", "platform", "page_context", "country", "region", "county", "city", "time")
TRENDING_DIMENSIONS = ("keyword", "domain", "platform", "page_context")
TRENDING_METRICS = ("suppressions", "events", "unique_users")
ACTIVITY_TYPES = ("added", "removed", "edited", "all")
QUERY_MEASURES = ("suppressions", "unique_users", "events")
COMPARE = ("previous_period",)  # the periods a request may be compared with


@dataclasses.dataclass(frozen=True)
class TopKeywords:
    window: str
    limit: int
    offset: int = 0             # rows of the full answer skipped before these (paging: service/api/paging.py)
    compare: str | None = None  # "previous_period": each record with its previous period (engine/compare.py)
    intervals: bool = False     # each count with an interval for its exact value (engine/intervals.py)


@dataclasses.dataclass(frozen=True)
class KeywordTimeseries:
    keyword: str  # already normalised
    window: str
    bucket: str
    compare: str | None = None  # "previous_period": each record with its previous period (engine/compare.py)
    intervals: bool = False     # each count with an interval for its exact value (engine/intervals.py)


@dataclasses.dataclass(frozen=True)
class DomainTimeseries:
    domain: str  # already normalised
    window: str
    bucket: str
    compare: str | None = None  # "previous_period": each record with its previous period (engine/compare.py)
    intervals: bool = False     # each count with an interval for its exact value (engine/intervals.py)


@dataclasses.dataclass(frozen=True)
class GeoHeat:
    window: str
    level: str
    compare: str | None = None  # "previous_period": each record with its previous period (engine/compare.py)
    intervals: bool = False     # each count with an interval for its exact value (engine/intervals.py)


@dataclasses.dataclass(frozen=True)
class Trending:
    window: str
    dimension: str
    metric: str
    limit: int
    min_baseline: float
    offset: int = 0             # rows of the full answer skipped before these (paging: service/api/paging.py)


@dataclasses.dataclass(frozen=True)
class KeywordActivity:
    window: str
    type: str
    limit: int
    offset: int = 0             # rows of the full answer skipped before these (paging: service/api/paging.py)
    compare: str | None = None  # "previous_period": each record with its previous period (engine/compare.py)
    intervals: bool = False     # each count with an interval for its exact value (engine/intervals.py)


@dataclasses.dataclass(frozen=True)
class FlexibleQuery:
    window: str
    filters: Mapping[str, tuple[str, ...]]  # FILTER_COLUMNS keys -> normalised values
    group_by: tuple[str, ...]
    bucket: str | None
    order_by: str = "suppressions"
    order: str = "desc"
    limit: int = 100
    offset: int = 0             # rows of the full answer skipped before these (paging: service/api/paging.py)
    format: str = "json"
    compare: str | None = None  # "previous_period": each record with its previous period (engine/compare.py)
    intervals: bool = False     # each count with an interval for its exact value (engine/intervals.py)


# Any request an engine takes: what `Endpoint.build` makes, one type per operation.
Request = TopKeywords | KeywordTimeseries | DomainTimeseries | GeoHeat | Trending | KeywordActivity | FlexibleQuery
