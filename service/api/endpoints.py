"""The data endpoints of the spec, as data: path, method, minimum tier, MCP tool name, parameters,
response fields and an example request. They are the first rows of the operation table
(service/api/operations.py, every operation), from which routing and the OpenAPI document are generated;
validation is generated from them here, and the client and the MCP tools from the document, so a
bound or a field is written exactly once. Their shared parameters are in service/api/endpoint_params.py,
their records' schemas in service/api/record_schemas.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from paramcheck import FieldError, reason
from service.api.endpoint_params import (
    AS_OF,
    COMPARE,
    INTERVALS,
    KEYWORD_TEXT,
    LONG_WINDOWS,
    MIN_BASELINE,
    OFFSET,
    QUERY_FILTERS,
    QUERY_WINDOWS,
    SHORT_WINDOWS,
    TRENDING_DIMENSION,
    TRENDING_LIMIT,
    TRENDING_METRIC,
    TRENDING_WINDOW,
    bucket_param,
    limit_param,
    query_domain,
    window_param,
)
from service.api.params import Param
from service.api.record_schemas import (
    ACTIVITY_RECORD,
    GEO_RECORD,
    QUERY_RECORD,
    TIME_BUCKET,
    TOP_KEYWORD,
    TRENDING_RECORD,
    with_extras,
)
from service.api.tiers import Tier
from service.api.windows import trending_periods
from service.engine import requests as rq

BASE_PATH = "/api/v1/signals"


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
    # The arguments a consumer would send (a valid request that has records on the test fixture's
    # data): the tests, the client's tests and the MCP tools' call every endpoint with it.
    example: Mapping[str, Any]
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
        # stale; service/answers/stale.py): the hour it is for. Never in a current answer.
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
                                            expected=bucket_param().allowed()))]
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
        params=(window_param(SHORT_WINDOWS, "24h"), limit_param(500, 50), AS_OF, COMPARE, INTERVALS, OFFSET),
        records_field="keywords", record_schema=with_extras(TOP_KEYWORD, "top_keywords"), echo=("window",),
        build=lambda v: rq.TopKeywords(**_flags(v)),
        example={"window": "7d", "limit": 5},
    ),
    Endpoint(
        name="keyword_timeseries", tool="signals_keyword_timeseries", method="GET", path="/keyword-timeseries",
        min_tier=Tier.OBSERVER, summary="Keyword timeseries",
        description="Suppression counts for one keyword over time, bucketed and zero-filled, oldest first. "
                    "The keyword is normalised (Unicode NFKC, case-folded, spaces collapsed) before matching.",
        params=(Param("keyword", "string", "The keyword (any spelling; it is normalised).", required=True,
                      **KEYWORD_TEXT),
                window_param(LONG_WINDOWS, "7d"), bucket_param(), AS_OF, COMPARE, INTERVALS),
        records_field="timeseries", record_schema=with_extras(TIME_BUCKET, "keyword_timeseries"),
        echo=("keyword", "window", "bucket"),
        build=lambda v: rq.KeywordTimeseries(**_flags(v)),
        example={"keyword": "snakes", "window": "24h", "bucket": "hour"},
    ),
    Endpoint(
        name="domain_timeseries", tool="signals_domain_timeseries", method="GET", path="/domain-timeseries",
        min_tier=Tier.OBSERVER, summary="Domain timeseries",
        description="Suppression activity on one domain over time, bucketed and zero-filled, oldest first. "
                    "The domain is reduced to its registrable domain as stored (https://old.reddit.com/r/x -> reddit.com).",
        params=(Param("domain", "string", "A domain name, e.g. reddit.com.", required=True,
                      normalise=query_domain, min_length=1, max_length=253, not_blank=True),
                window_param(LONG_WINDOWS, "7d"), bucket_param(), AS_OF, COMPARE, INTERVALS),
        records_field="timeseries", record_schema=with_extras(TIME_BUCKET, "domain_timeseries"),
        echo=("domain", "window", "bucket"),
        build=lambda v: rq.DomainTimeseries(**_flags(v)),
        example={"domain": "reddit.com", "window": "7d", "bucket": "day"},
    ),
    Endpoint(
        name="geo_heat", tool="signals_geo_heat", method="GET", path="/geo-heat",
        min_tier=Tier.OBSERVER, summary="Geo heat map",
        description="Geographic distribution of all suppression activity at one level, most active first.",
        params=(window_param(SHORT_WINDOWS, "24h"),
                Param("level", "string", "Geographic level.", default="country", enum=rq.GEO_LEVELS), AS_OF,
                COMPARE, INTERVALS),
        records_field="regions", record_schema=with_extras(GEO_RECORD, "geo_heat"), echo=("window", "level"),
        build=lambda v: rq.GeoHeat(**_flags(v)),
        example={"window": "24h", "level": "region"},
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
        example={"window": "24h", "dimension": "keyword", "metric": "suppressions", "limit": 10,
                 "min_baseline": 5},
        extra=_trending_extra, extra_schema=_TRENDING_EXTRA_SCHEMA,
    ),
    Endpoint(
        name="keyword_activity", tool="signals_keyword_activity", method="GET", path="/keyword-activity",
        min_tier=Tier.OBSERVER, summary="Keyword list activity",
        description="Which keywords users add to, remove from or edit in their filter lists. type=added, "
                    "removed or edited lists keywords with at least one such change, most first; all ranks "
                    "by total_events.",
        params=(window_param(SHORT_WINDOWS, "24h"),
                Param("type", "string", "Kind of change.", default="all", enum=rq.ACTIVITY_TYPES),
                limit_param(500, 50), AS_OF, COMPARE, INTERVALS, OFFSET),
        records_field="keywords", record_schema=with_extras(ACTIVITY_RECORD, "keyword_activity"), echo=("window", "type"),
        build=lambda v: rq.KeywordActivity(**_flags(v)),
        example={"window": "7d", "type": "added", "limit": 10},
    ),
    Endpoint(
        name="query", tool="signals_query", method="POST", path="/query",
        min_tier=Tier.ANALYST, summary="Flexible query",
        description="Filter and group suppression events by any combination of dimensions in one request.",
        params=(
            window_param(QUERY_WINDOWS, None),
            QUERY_FILTERS,
            Param("group_by", "array", "Dimensions to group by, in output order; time needs bucket.",
                  default=(), max_items=5, unique_items=True,
                  items=Param("dimension", "string", "", enum=rq.GROUP_BY_DIMENSIONS)),
            bucket_param(default=None),
            Param("order_by", "string", "Measure to order by.", default="suppressions", enum=rq.QUERY_MEASURES),
            Param("order", "string", "Order direction.", default="desc", enum=("asc", "desc")),
            limit_param(1000, 100),
            Param("format", "string", "Response format: json, or csv (a downloadable file).", default="json",
                  enum=("json", "csv")),
            AS_OF, COMPARE, INTERVALS,
        ),
        records_field="results", record_schema=with_extras(QUERY_RECORD, "query"), echo=("window", "bucket", "group_by"),
        build=_build_query, check=_check_query, check_schema=_QUERY_CHECK_SCHEMA, cost_bounded=True,
        example={"window": "7d", "filters": {"countries": ["US"]}, "group_by": ["region", "time"], "bucket": "day",
                 "order_by": "events", "order": "asc", "limit": 20},
    ),
)

BY_NAME = {endpoint.name: endpoint for endpoint in ENDPOINTS}
