"""The seven data endpoints of the spec, as data: path, method, minimum tier, MCP tool name,
parameters, response fields. They are the first rows of the operation table (service/operations.py,
all sixteen operations), from which routing and the OpenAPI document are generated; validation is
generated from them here, and the client and the MCP tools from the document, so a bound or a field
is written exactly once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any, TypedDict

from connectors.columns import level_text
from paramcheck import FieldError, reason
from service.engine import requests as rq
from service.engine.shapes import SHAPES
from service.paging import MAX_OFFSET
from service.params import Param
from service.store.domains import registrable_domain
from service.store.normalise import KEYWORD_MAX_CHARS, normalise_domain, normalise_keyword
from service.store.schema import PAGE_CONTEXTS, PLATFORMS
from service.tiers import Tier
from service.windows import BUCKETS, TRENDING_WINDOWS, trending_periods

BASE_PATH = "/api/v1/signals"

SHORT_WINDOWS = ("1h", "6h", "12h", "24h", "7d", "30d")
LONG_WINDOWS = ("24h", "7d", "30d", "90d")
QUERY_WINDOWS = ("1h", "6h", "12h", "24h", "7d", "30d", "90d")


def _window(choices: tuple[str, ...], default: str | None) -> Param:
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


def _limit(maximum: int, default: int) -> Param:
    return Param("limit", "integer", "Maximum number of records returned.", default=default, minimum=1, maximum=maximum)


OFFSET = Param(
    "offset", "integer",
    "Skip this many rows of the full answer: the page of `limit` rows from here (rank and order as in the "
    "un-paged answer, every number the same). The Signals-Total-Rows header says how many rows the full answer "
    "holds, and Link rel=\"next\" gives the next page's URL. Leave it out for the first page.",
    minimum=0, maximum=MAX_OFFSET,
)


def _bucket(required: bool = False, default: str | None = "hour") -> Param:
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


_KEYWORD_TEXT = _TextRules(normalise=normalise_keyword, min_length=1, max_length=KEYWORD_MAX_CHARS, not_blank=True)
_FILTER_VALUES = 50


def _filter(name: str, what: str, item: Param) -> Param:
    return Param(name, "array", f"Only events whose {what} is one of these values.",
                 min_items=1, max_items=_FILTER_VALUES, items=item)


_ID = _Lengths(min_length=1, max_length=100)

QUERY_FILTERS = Param(
    "filters", "object",
    "Restrict the events counted. Values within one key are alternatives (OR); keys combine with AND.",
    properties=(
        _filter("keywords", "normalised keyword", Param("keyword", "string", "", **_KEYWORD_TEXT)),
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

# ---- response records (JSON Schema) -------------------------------------------------------

_INT = {"type": "integer", "minimum": 0}
_TS = {"type": "string", "format": "date-time", "description": "Bucket start, ISO 8601 UTC."}


# What the measures in the records mean (the docs' "What the numbers mean"): each record schema's
# property of that name carries it as its description (the MCP tools tell a model from these).
MEASURES = {
    "suppressions": "items hidden by users' filters",
    "events": "filtering events (page renders where a filter hid something)",
    "users_est": "distinct users, an estimate (users do not add up across rows)",
    "unique_users": "distinct users, an estimate (users do not add up across rows)",
    "adds": "keywords added to users' filter lists",
    "removes": "keywords removed",
    "edits": "keywords edited",
    "net_adds": "adds - removes",
    "total_events": "adds + removes + edits",
    "growth_pct": "growth of the hourly rate, recent period vs baseline period, in percent",
    "keyword_count": "distinct keywords suppressed there",
    "recent": "the metric's total in the recent period",
    "baseline": "the metric's total in the baseline period",
}


def _described(properties: dict[str, Any]) -> dict[str, Any]:
    """The properties, each measure with its meaning (MEASURES) as its description."""
    return {name: {**schema, "description": MEASURES[name]} if name in MEASURES else schema
            for name, schema in properties.items()}


def _record(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": _described(properties), "required": list(properties),
            "additionalProperties": False}


def _with_extras(record: dict[str, Any], endpoint: str) -> dict[str, Any]:
    """A record schema with the optional fields compare and intervals add; the spec's
    fields stay as they are, and stay the only required ones."""
    measures = SHAPES[endpoint].measures
    count = {"type": "integer"}

    def per_measure(schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {"type": "object", "description": description, "properties": {m: schema for m in measures},
                "required": list(measures), "additionalProperties": False}

    change = {"type": "object", "properties": {
        "pct": {"type": ["number", "null"], "description": "100 x (current - previous) / |previous|, 2 decimals; "
                                                          "null when previous is 0."},
        "beyond_noise": {"type": "boolean", "description": "The change is larger than the privacy noise and "
                                                            "ordinary chance can explain."}},
        "required": ["pct", "beyond_noise"], "additionalProperties": False}
    interval = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                "description": f"[low, high]: holds the exact value about {level_text(INTERVAL_LEVEL)} of the time."}
    return {**record, "properties": {
        **record["properties"],
        "previous": per_measure(count, "With compare=previous_period: the counts in the previous period."),
        "change": per_measure(change, "With compare=previous_period: the change of each count."),
        "intervals": per_measure(interval, "With intervals=true: an interval for each count's exact value."),
    }}


TOP_KEYWORD = _record({"keyword_raw": {"type": "string"}, "suppressions": _INT, "users_est": _INT,
                       "rank": {"type": "integer", "minimum": 1}})
TIME_BUCKET = _record({"ts": _TS, "suppressions": _INT, "users_est": _INT, "events": _INT})
GEO_RECORD = _record({"geo_key": {"type": "string"}, "label": {"type": "string"}, "suppressions": _INT,
                      "unique_users": _INT, "keyword_count": _INT})
TRENDING_RECORD = _record({"value": {"type": "string"}, "recent": {"type": "number"},
                           "baseline": {"type": "number"}, "growth_pct": {"type": "number"}})
ACTIVITY_RECORD = _record({"keyword": {"type": "string"}, "adds": _INT, "removes": _INT, "edits": _INT,
                           "total_events": _INT, "unique_users": _INT, "net_adds": {"type": "integer"}})
QUERY_RECORD = {
    "type": "object",
    "description": "Dimension fields in group_by order (geography as <level>_id and <level>_name, time as ts), "
                   "then suppressions, unique_users, events. With an empty group_by: one row of totals.",
    "properties": _described({
        "keyword": {"type": "string"}, "domain": {"type": "string"}, "platform": {"type": "string"},
        "page_context": {"type": "string"},
        "country_id": {"type": "string"}, "country_name": {"type": "string"},
        "region_id": {"type": "string"}, "region_name": {"type": "string"},
        "county_id": {"type": "string"}, "county_name": {"type": "string"},
        "city_id": {"type": "string"}, "city_name": {"type": "string"},
        "ts": _TS, "suppressions": _INT, "unique_users": _INT, "events": _INT,
    }),
    "required": ["suppressions", "unique_users", "events"],
    "additionalProperties": False,
}


@dataclasses.dataclass(frozen=True)
class Endpoint:
    name: str                 # operationId and engine method
    tool: str                 # MCP tool name (spec)
    method: str
    path: str                 # relative to BASE_PATH
    min_tier: Tier
    summary: str
    description: str
    params: tuple[Param, ...]
    records_field: str        # name of the array of records in the response
    record_schema: dict[str, Any]
    echo: tuple[str, ...]     # request values echoed in the response, in order, before the records
    build: Callable[[dict[str, Any]], Any]  # validated values -> engine request
    extra: Callable[[Any, dt.datetime], dict[str, Any]] | None = None  # computed envelope fields
    extra_schema: dict[str, Any] | None = None  # their JSON Schema, by field, in `extra`'s order
    check: Callable[[dict[str, Any]], list[FieldError]] | None = None  # rules across several fields
    check_schema: dict[str, Any] | None = None  # the same rules in JSON Schema, for the OpenAPI document
    # Refused with 422 before computing when its cells could exceed the deployment's bound
    # (SIGNALS_QUERY_MAX_CELLS); the document then gives the bound and the cost note.
    cost_bounded: bool = False

    @property
    def full_path(self) -> str:
        return BASE_PATH + self.path

    @property
    def in_body(self) -> bool:
        return self.method == "POST"

    def envelope_schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for name in self.echo:
            param = next((p for p in self.params if p.name == name), None)
            if param is None:  # echo of a computed value
                continue
            schema = param.json_schema()
            schema.pop("default", None)
            if param.normalise is not None:  # the echo is the normalised value: its length may differ
                for key in ("minLength", "maxLength", "pattern"):
                    schema.pop(key, None)
            if param.default is None and not param.required:  # absent: echoed as null
                schema = _nullable_echo(param)
            props[name] = schema
        props.update(self.extra_schema or {})
        props[self.records_field] = {"type": "array", "items": self.record_schema}
        props["disclaimer"] = {"type": "string", "minLength": 1}
        required = list(props)
        # Only in the previous hour's answer served while the current one computes (X-Cache:
        # stale; service/stale.py): the hour it is for. Never in a current answer.
        props = {"as_of": {"type": "string", "format": "date-time",
                               "description": "Present only in an answer served stale (header X-Cache: stale) "
                                              "while the current one is computed: the as_of this earlier "
                                          "answer is for."}, **props}
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _nullable_echo(param: Param) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": [param.type, "null"]}
    if param.enum is not None:
        schema["enum"] = [*param.enum, None]
    schema["description"] = f"Echo of the request's {param.name}; null when absent."
    return schema


def _flags(values: dict[str, Any]) -> dict[str, Any]:
    """intervals absent and intervals=false are one request (one cache entry), and so are offset
    absent and offset=0."""
    return {**values, "intervals": bool(values.get("intervals")), **_first_page(values)}


def _first_page(values: dict[str, Any]) -> dict[str, Any]:
    return {"offset": values["offset"] or 0} if "offset" in values else {}


# /trending's parameters, named: a webhook's fields are these (service/webhooks/fields.py), and its
# alerts are computed with TRENDING_LIMIT's maximum (service/webhooks/evaluate.py).
TRENDING_WINDOW = _window(TRENDING_WINDOWS, "24h")
TRENDING_DIMENSION = Param("dimension", "string", "Dimension whose values are compared.", default="keyword",
                           enum=rq.TRENDING_DIMENSIONS)
TRENDING_METRIC = Param("metric", "string", "Measure compared.", default="suppressions", enum=rq.TRENDING_METRICS)
TRENDING_LIMIT = _limit(500, 50)
MIN_BASELINE = Param("min_baseline", "number", "Values whose baseline total is below this are left out.",
                     default=10, minimum=0)


def _trending_extra(req: rq.Trending, as_of: dt.datetime) -> dict[str, Any]:
    periods = trending_periods(req.window, as_of)
    return {"recent_period": periods.recent_label, "baseline_period": periods.baseline_label}


_TRENDING_EXTRA_SCHEMA = {
    "recent_period": {"type": "string", "description": "Human-readable length of the recent period."},
    "baseline_period": {"type": "string", "description": "Human-readable description of the baseline period."},
}


def _check_query(values: dict[str, Any]) -> list[FieldError]:
    if "time" in values["group_by"] and values["bucket"] is None:
        return [FieldError("bucket", reason("required_when", field="group_by", value="time",
                                            expected=_bucket().allowed()))]
    return []


# _check_query in the document: if group_by contains "time", bucket is required.
_QUERY_CHECK_SCHEMA = {
    "if": {"properties": {"group_by": {"contains": {"const": "time"}}}, "required": ["group_by"]},
    "then": {"required": ["bucket"]},
}


def _build_query(values: dict[str, Any]) -> rq.FlexibleQuery:
    # Canonical form: sorted keys, sorted distinct values. Order within a filter does not change
    # the answer, so it must not change the cache key (or, later, the privacy cell).
    filters = {key: tuple(sorted(set(v))) for key, v in sorted((values["filters"] or {}).items())}
    return rq.FlexibleQuery(
        window=values["window"], filters=filters, group_by=tuple(values["group_by"]),
        bucket=values["bucket"], order_by=values["order_by"], order=values["order"],
        limit=values["limit"], format=values["format"],
        compare=values["compare"], intervals=bool(values["intervals"]),
    )


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        name="top_keywords", tool="signals_top_keywords", method="GET", path="/top-keywords",
        min_tier=Tier.OBSERVER, summary="Top keywords",
        description="The most suppressed keywords globally, ranked by total suppression count.",
        params=(_window(SHORT_WINDOWS, "24h"), _limit(500, 50), AS_OF, COMPARE, INTERVALS, OFFSET),
        records_field="keywords", record_schema=_with_extras(TOP_KEYWORD, "top_keywords"), echo=("window",),
        build=lambda v: rq.TopKeywords(**_flags(v)),
    ),
    Endpoint(
        name="keyword_timeseries", tool="signals_keyword_timeseries", method="GET", path="/keyword-timeseries",
        min_tier=Tier.OBSERVER, summary="Keyword timeseries",
        description="Suppression counts for one keyword over time, bucketed and zero-filled, oldest first. "
                    "The keyword is normalised (Unicode NFKC, case-folded, spaces collapsed) before matching.",
        params=(Param("keyword", "string", "The keyword (any spelling; it is normalised).", required=True,
                      **_KEYWORD_TEXT),
                _window(LONG_WINDOWS, "7d"), _bucket(), AS_OF, COMPARE, INTERVALS),
        records_field="timeseries", record_schema=_with_extras(TIME_BUCKET, "keyword_timeseries"),
        echo=("keyword", "window", "bucket"),
        build=lambda v: rq.KeywordTimeseries(**_flags(v)),
    ),
    Endpoint(
        name="domain_timeseries", tool="signals_domain_timeseries", method="GET", path="/domain-timeseries",
        min_tier=Tier.OBSERVER, summary="Domain timeseries",
        description="Suppression activity on one domain over time, bucketed and zero-filled, oldest first. "
                    "The domain is reduced to its registrable domain as stored (https://old.reddit.com/r/x -> reddit.com).",
        params=(Param("domain", "string", "A domain name, e.g. reddit.com.", required=True,
                      normalise=query_domain, min_length=1, max_length=253, not_blank=True),
                _window(LONG_WINDOWS, "7d"), _bucket(), AS_OF, COMPARE, INTERVALS),
        records_field="timeseries", record_schema=_with_extras(TIME_BUCKET, "domain_timeseries"),
        echo=("domain", "window", "bucket"),
        build=lambda v: rq.DomainTimeseries(**_flags(v)),
    ),
    Endpoint(
        name="geo_heat", tool="signals_geo_heat", method="GET", path="/geo-heat",
        min_tier=Tier.OBSERVER, summary="Geo heat map",
        description="Geographic distribution of all suppression activity at one level, most active first.",
        params=(_window(SHORT_WINDOWS, "24h"),
                Param("level", "string", "Geographic level.", default="country", enum=rq.GEO_LEVELS), AS_OF,
                COMPARE, INTERVALS),
        records_field="regions", record_schema=_with_extras(GEO_RECORD, "geo_heat"), echo=("window", "level"),
        build=lambda v: rq.GeoHeat(**_flags(v)),
    ),
    Endpoint(
        name="trending", tool="signals_trending", method="GET", path="/trending",
        min_tier=Tier.OBSERVER, summary="Trending detection",
        description="Dimension values with the fastest growth of their hourly rate in the recent period "
                    "compared with the baseline period. 24h: last 6 hours vs 6 to 24 hours ago; 7d: last 24 "
                    "hours vs 1 to 7 days ago; 30d: last 7 days vs 7 to 30 days ago. growth_pct = "
                    "100 x (recent/R - baseline/B) / (baseline/B), R and B the period lengths in hours. "
                    "Only growth that the privacy noise and chance cannot explain counts: values are listed "
                    "when their growth stays above 0 with recent taken lower and baseline higher by 4.39 x "
                    "their noise s.d. + 3.09 x sqrt(count), and ordered by that bound (ties by value); "
                    "growth_pct is the plain growth of the numbers shown.",
        params=(TRENDING_WINDOW, TRENDING_DIMENSION, TRENDING_METRIC, TRENDING_LIMIT, MIN_BASELINE, AS_OF, OFFSET),
        records_field="trending", record_schema=TRENDING_RECORD, echo=("window", "dimension", "metric"),
        build=lambda v: rq.Trending(**{**v, "min_baseline": float(v["min_baseline"]), **_first_page(v)}),
        extra=_trending_extra, extra_schema=_TRENDING_EXTRA_SCHEMA,
    ),
    Endpoint(
        name="keyword_activity", tool="signals_keyword_activity", method="GET", path="/keyword-activity",
        min_tier=Tier.OBSERVER, summary="Keyword list activity",
        description="Which keywords users add to, remove from or edit in their filter lists. type=added, "
                    "removed or edited lists keywords with at least one such change, most first; all ranks "
                    "by total_events.",
        params=(_window(SHORT_WINDOWS, "24h"),
                Param("type", "string", "Kind of change.", default="all", enum=rq.ACTIVITY_TYPES),
                _limit(500, 50), AS_OF, COMPARE, INTERVALS, OFFSET),
        records_field="keywords", record_schema=_with_extras(ACTIVITY_RECORD, "keyword_activity"), echo=("window", "type"),
        build=lambda v: rq.KeywordActivity(**_flags(v)),
    ),
    Endpoint(
        name="query", tool="signals_query", method="POST", path="/query",
        min_tier=Tier.ANALYST, summary="Flexible query",
        description="Filter and group suppression events by any combination of dimensions in one request.",
        params=(
            _window(QUERY_WINDOWS, None),
            QUERY_FILTERS,
            Param("group_by", "array", "Dimensions to group by, in output order; time needs bucket.",
                  default=(), max_items=5, unique_items=True,
                  items=Param("dimension", "string", "", enum=rq.GROUP_BY_DIMENSIONS)),
            _bucket(default=None),
            Param("order_by", "string", "Measure to order by.", default="suppressions", enum=rq.QUERY_MEASURES),
            Param("order", "string", "Order direction.", default="desc", enum=("asc", "desc")),
            _limit(1000, 100),
            Param("format", "string", "Response format: json, or csv (a downloadable file).", default="json",
                  enum=("json", "csv")),
            AS_OF, COMPARE, INTERVALS,
        ),
        records_field="results", record_schema=_with_extras(QUERY_RECORD, "query"), echo=("window", "bucket", "group_by"),
        build=_build_query, check=_check_query, check_schema=_QUERY_CHECK_SCHEMA, cost_bounded=True,
    ),
)

BY_NAME = {endpoint.name: endpoint for endpoint in ENDPOINTS}

# ---- GET /api/v1/account (service/resources/account.py) ------------------------------------

ACCOUNT_PATH = "/api/v1/account"
ACCOUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subscription": {"type": "string", "description": "Name of the key's subscription."},
        "plan": {"type": "string", "enum": [t.slug for t in Tier], "description": "The subscription's plan (tier)."},
        "plan_label": {"type": "string", "description": "The plan's name as written in the docs (Observer, ...)."},
        "requests_per_minute": {"type": "integer", "minimum": 1, "description": "The plan's rate limit."},
        "endpoints": {
            "type": "array",
            "description": "The endpoints the plan may call.",
            "items": _record({"operation": {"type": "string", "description": "operationId in this document."},
                              "method": {"type": "string", "enum": ["GET", "POST"]},
                              "path": {"type": "string"}}),
        },
        "key_prefix": {"type": "string", "description": "The key's public prefix (never the key or its hash)."},
        "key_expires_at": {"type": ["string", "null"], "format": "date-time",
                           "description": "When the key expires; null when it does not."},
        "disclaimer": {"type": "string", "minLength": 1},
    },
    "additionalProperties": False,
}
ACCOUNT_SCHEMA["required"] = list(ACCOUNT_SCHEMA["properties"])
