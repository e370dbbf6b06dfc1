"""The data endpoints' response records as JSON Schema (the OpenAPI document's, and the MCP tools'
output schemas), with what each measure means, and the optional fields compare and intervals add.
"""

from __future__ import annotations

from typing import Any

from flatcolumns import level_text
from service.api.endpoint_params import INTERVAL_LEVEL
from service.engine.shapes import SHAPES

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


def described(properties: dict[str, Any]) -> dict[str, Any]:
    """The properties, each measure with its meaning (MEASURES) as its description."""
    return {name: {**schema, "description": MEASURES[name]} if name in MEASURES else schema
            for name, schema in properties.items()}


def record(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": described(properties), "required": list(properties),
            "additionalProperties": False}


def with_extras(record: dict[str, Any], endpoint: str) -> dict[str, Any]:
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


TOP_KEYWORD = record({"keyword_raw": {"type": "string"}, "suppressions": _INT, "users_est": _INT,
                       "rank": {"type": "integer", "minimum": 1}})
TIME_BUCKET = record({"ts": _TS, "suppressions": _INT, "users_est": _INT, "events": _INT})
GEO_RECORD = record({"geo_key": {"type": "string"}, "label": {"type": "string"}, "suppressions": _INT,
                      "unique_users": _INT, "keyword_count": _INT})
TRENDING_RECORD = record({"value": {"type": "string"}, "recent": {"type": "number"},
                           "baseline": {"type": "number"}, "growth_pct": {"type": "number"}})
ACTIVITY_RECORD = record({"keyword": {"type": "string"}, "adds": _INT, "removes": _INT, "edits": _INT,
                           "total_events": _INT, "unique_users": _INT, "net_adds": {"type": "integer"}})
QUERY_RECORD = {
    "type": "object",
    "description": "Dimension fields in group_by order (geography as <level>_id and <level>_name, time as ts), "
                   "then suppressions, unique_users, events. With an empty group_by: one row of totals.",
    "properties": described({
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

