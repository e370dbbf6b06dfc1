"""Query engine over the in-memory event store (polars): typed requests in, published frames out.

`Engine` answers the seven endpoints; the request types it takes live in `service.engine.requests`
and are re-exported here.
"""

from service.engine.engine import Engine
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.engine.slicing import time_slice

__all__ = [
    "DomainTimeseries",
    "Engine",
    "FlexibleQuery",
    "GeoHeat",
    "KeywordActivity",
    "KeywordTimeseries",
    "TopKeywords",
    "Trending",
    "time_slice",
]
