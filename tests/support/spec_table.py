"""The spec's endpoint table, typed by hand from docs/spec.md.

Deliberately independent of service/api/endpoints.py: tests compare the service against this, so a
wrong bound or default in the service's own table makes a test fail.
"""

BASE = "/api/v1/signals"

SHORT = ["1h", "6h", "12h", "24h", "7d", "30d"]
LONG = ["24h", "7d", "30d", "90d"]

# path -> parameter -> (allowed values or (min, max) bounds, default)
GET_ENDPOINTS = {
    "/top-keywords": {
        "window": (SHORT, "24h"),
        "limit": ((1, 500), 50),
    },
    "/keyword-timeseries": {
        "keyword": (None, None),  # required
        "window": (LONG, "7d"),
        "bucket": (["hour", "day", "week"], "hour"),
    },
    "/domain-timeseries": {
        "domain": (None, None),  # required
        "window": (LONG, "7d"),
        "bucket": (["hour", "day", "week"], "hour"),
    },
    "/geo-heat": {
        "window": (SHORT, "24h"),
        "level": (["country", "region", "county", "city"], "country"),
    },
    "/trending": {
        "window": (["24h", "7d", "30d"], "24h"),
        "dimension": (["keyword", "domain", "platform", "page_context"], "keyword"),
        "metric": (["suppressions", "events", "unique_users"], "suppressions"),
        "limit": ((1, 500), 50),
        "min_baseline": (None, 10),
    },
    "/keyword-activity": {
        "window": (SHORT, "24h"),
        "type": (["added", "removed", "edited", "all"], "all"),
        "limit": ((1, 500), 50),
    },
}

# Issue 25 adds optional parameters without defaults (body fields on /query): `as_of` everywhere,
# `compare` and `intervals` where a record has a previous period and intervals to show.
COMPARE_PATHS = ["/top-keywords", "/geo-heat", "/keyword-activity", "/keyword-timeseries", "/domain-timeseries"]
# Issue 42 adds `offset` (a later page) to the ranked GET endpoints; /query's later pages are asked
# with a `cursor` query parameter instead (the body stays as it is).
PAGED_PATHS = ["/top-keywords", "/trending", "/keyword-activity"]
ADDED = {path: {"as_of"} | ({"compare", "intervals"} if path in [*COMPARE_PATHS, "/query"] else set())
         | ({"offset"} if path in PAGED_PATHS else set())
         for path in [*GET_ENDPOINTS, "/query"]}

REQUIRED = {"/keyword-timeseries": {"keyword": "bitcoin"}, "/domain-timeseries": {"domain": "reddit.com"}}

# Response envelope fields and record fields, per endpoint.
ENVELOPES = {
    "/top-keywords": (["window", "keywords", "disclaimer"], "keywords",
                      {"keyword_raw": str, "suppressions": int, "users_est": int, "rank": int}),
    "/keyword-timeseries": (["keyword", "window", "bucket", "timeseries", "disclaimer"], "timeseries",
                            {"ts": str, "suppressions": int, "users_est": int, "events": int}),
    "/domain-timeseries": (["domain", "window", "bucket", "timeseries", "disclaimer"], "timeseries",
                           {"ts": str, "suppressions": int, "users_est": int, "events": int}),
    "/geo-heat": (["window", "level", "regions", "disclaimer"], "regions",
                  {"geo_key": str, "label": str, "suppressions": int, "unique_users": int, "keyword_count": int}),
    "/trending": (["window", "dimension", "metric", "recent_period", "baseline_period", "trending", "disclaimer"],
                  "trending", {"value": str, "recent": (int, float), "baseline": (int, float),
                               "growth_pct": (int, float)}),
    "/keyword-activity": (["window", "type", "keywords", "disclaimer"], "keywords",
                          {"keyword": str, "adds": int, "removes": int, "edits": int, "total_events": int,
                           "unique_users": int, "net_adds": int}),
}

QUERY_WINDOWS = ["1h", "6h", "12h", "24h", "7d", "30d", "90d"]
QUERY_FILTER_KEYS = ["keywords", "domains", "platforms", "page_contexts", "countries", "regions", "counties", "cities"]
QUERY_GROUP_BY = ["keyword", "domain", "platform", "page_context", "country", "region", "county", "city", "time"]

MIN_TIER = {**{path: "observer" for path in GET_ENDPOINTS}, "/query": "analyst"}
RATE_LIMITS = {"observer": 30, "analyst": 120, "professional": 300}
