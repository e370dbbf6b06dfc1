"""The data endpoints' parameters that several of them share, or that other tables reuse: windows,
as_of, compare, intervals, limit, offset, bucket, the keyword's text rules, /query's filters and
/trending's parameters (a webhook's fields are these: service/webhooks/fields.py). The endpoint
table (service/api/endpoints.py) puts them together; each bound is written here once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from flatcolumns import level_text
from service.api.paging import MAX_OFFSET
from service.api.params import Param
from service.api.windows import BUCKETS, TRENDING_WINDOWS
from service.engine import requests as rq
from service.store.domains import registrable_domain
from service.store.normalise import KEYWORD_MAX_CHARS, normalise_domain, normalise_keyword
from service.store.schema import PAGE_CONTEXTS, PLATFORMS

SHORT_WINDOWS = ("1h", "6h", "12h", "24h", "7d", "30d")
LONG_WINDOWS = ("24h", "7d", "30d", "90d")
QUERY_WINDOWS = ("1h", "6h", "12h", "24h", "7d", "30d", "90d")


def window_param(choices: tuple[str, ...], default: str | None) -> Param:
    return Param(
        "window", "string",
        "Length of the time window ending at as_of (the start of the current UTC hour, or the end of the last hour with data).",
        required=default is None, default=default, enum=choices,
    )


AS_OF = Param(
    "as_of", "string",
    "End the window at this earlier hour instead of the current as_of: an ISO 8601 UTC hour such as "
    "2026-11-20T13:00:00Z, not after the current as_of and not before the data's first hour plus the window. "
    "The same request with the current as_of (or without as_of) gives the same answer byte for byte; a past "
    "as_of keeps its answer until data for the dates it covers change. Last-Modified and X-Signals-As-Of carry it.",
    max_length=40, format="date-time",
)


COMPARE = Param(
    "compare", "string",
    "previous_period: each record gains `previous` (its counts in the period of the same length that ends where "
    "the window starts: what the same request with as_of one window earlier publishes for the same value, 0 where "
    "that cell is not published; for a timeseries bucket, the bucket one window earlier) and `change` (per count: "
    "`pct` = 100 x (current - previous) / |previous|, null when previous is 0, and `beyond_noise`: true when the "
    "change is larger than the privacy noise and ordinary chance of both numbers can explain: /trending's margins, "
    "each part at 1 in 1,000, added as independent errors). The period before must not start before the data's first hour. Leave it out "
    "for the plain answer.",
    enum=rq.COMPARE,
)

# How often an interval of intervals=true holds the exact value (service/engine/intervals.py calibrates
# them so); published as the document's `x-signals-interval-level`, which the consumers show.
INTERVAL_LEVEL = 0.9

INTERVALS = Param(
    "intervals", "boolean",
    "true: each record gains `intervals`, per count [low, high], a range that holds the exact value (without "
    f"noise and without the per-user cap) about {level_text(INTERVAL_LEVEL)} of the time, from the noise scale of that cell and the "
    "downward bias the contribution cap can add (measured coverage by cell size: docs/privacy.md). Leave it out "
    "(or false) for the plain answer.",
)


def limit_param(maximum: int, default: int) -> Param:
    return Param("limit", "integer", "Maximum number of records returned.", default=default, minimum=1, maximum=maximum)


OFFSET = Param(
    "offset", "integer",
    "Skip this many rows of the full answer: the page of `limit` rows from here (rank and order as in the "
    "un-paged answer, every number the same). The Signals-Total-Rows header says how many rows the full answer "
    "holds, and Link rel=\"next\" gives the next page's URL. Leave it out for the first page.",
    minimum=0, maximum=MAX_OFFSET,
)


def bucket_param(required: bool = False, default: str | None = "hour") -> Param:
    return Param(
        "bucket", "string",
        "Bucket size: hour, day (UTC midnight) or week (ISO week, Monday 00:00 UTC).",
        default=default, enum=BUCKETS, required=required,
    )


def query_domain(raw: str) -> str:
    """A domain as ingest stores it (registrable domain: old.reddit.com -> reddit.com); text that
    is no host name is kept normalised, and simply matches nothing."""
    return registrable_domain(raw) or normalise_domain(raw)


class _Lengths(TypedDict):
    """`Param` keywords of a string's length (passed as **lengths)."""

    min_length: int
    max_length: int


class _TextRules(_Lengths):
    """`Param` keywords a keyword parameter's rules share (passed as **rules)."""

    normalise: Callable[[str], str]
    not_blank: bool


KEYWORD_TEXT = _TextRules(normalise=normalise_keyword, min_length=1, max_length=KEYWORD_MAX_CHARS, not_blank=True)
_FILTER_VALUES = 50


def _filter(name: str, what: str, item: Param) -> Param:
    return Param(name, "array", f"Only events whose {what} is one of these values.",
                 min_items=1, max_items=_FILTER_VALUES, items=item)


_ID = _Lengths(min_length=1, max_length=100)

QUERY_FILTERS = Param(
    "filters", "object",
    "Restrict the events counted. Values within one key are alternatives (OR); keys combine with AND.",
    properties=(
        _filter("keywords", "normalised keyword", Param("keyword", "string", "", **KEYWORD_TEXT)),
        _filter("domains", "registrable domain",
                Param("domain", "string", "", normalise=query_domain, not_blank=True, **_ID)),
        _filter("platforms", "platform", Param("platform", "string", "", enum=PLATFORMS)),
        _filter("page_contexts", "page context", Param("page_context", "string", "", enum=PAGE_CONTEXTS)),
        _filter("countries", "ISO 3166-1 alpha-2 country code",
                Param("country", "string", "", normalise=str.upper, min_length=2, max_length=2)),
        _filter("regions", "ISO 3166-2 region code (US-CA)",
                Param("region", "string", "", normalise=str.upper, **_ID)),
        _filter("counties", "US county FIPS code (06037)", Param("county", "string", "", **_ID)),
        _filter("cities", "GeoNames city id (5368361)", Param("city", "string", "", **_ID)),
    ),
)


# /trending's parameters, named: a webhook's fields are these (service/webhooks/fields.py), and its
# alerts are computed with TRENDING_LIMIT's maximum (service/webhooks/evaluate.py).
TRENDING_WINDOW = window_param(TRENDING_WINDOWS, "24h")
TRENDING_DIMENSION = Param("dimension", "string", "Dimension whose values are compared.", default="keyword",
                           enum=rq.TRENDING_DIMENSIONS)
TRENDING_METRIC = Param("metric", "string", "Measure compared.", default="suppressions", enum=rq.TRENDING_METRICS)
TRENDING_LIMIT = limit_param(500, 50)
MIN_BASELINE = Param("min_baseline", "number", "Values whose baseline total is below this are left out.",
                     default=10, minimum=0)
