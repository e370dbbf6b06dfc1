"""Column names and types of the two stored event tables (DESIGN "Event data").

This is what lands on disk after ingest. `user_id` is already the keyed hash (UInt64) of the
pseudonymous install id: the raw id never reaches the store.
"""

from __future__ import annotations

import polars as pl

TS = pl.Datetime("us", "UTC")

SUPPRESSIONS = "suppressions"
KEYWORD_CHANGES = "keyword_changes"
TABLES = (SUPPRESSIONS, KEYWORD_CHANGES)

SUPPRESSIONS_SCHEMA: dict[str, pl.DataType] = {
    "ts": TS,
    "user_id": pl.UInt64(),
    "keyword": pl.String(),
    "domain": pl.String(),
    "platform": pl.String(),
    "page_context": pl.String(),
    "country": pl.String(),
    "region": pl.String(),   # nullable
    "county": pl.String(),   # nullable
    "city": pl.String(),     # nullable
    "suppressions": pl.Int32(),
}

KEYWORD_CHANGES_SCHEMA: dict[str, pl.DataType] = {
    "ts": TS,
    "user_id": pl.UInt64(),
    "keyword": pl.String(),
    "action": pl.String(),
    "platform": pl.String(),
    "country": pl.String(),
}

SCHEMAS = {SUPPRESSIONS: SUPPRESSIONS_SCHEMA, KEYWORD_CHANGES: KEYWORD_CHANGES_SCHEMA}

# Columns that are low-cardinality dimensions: held as Enum (codes into their values) in memory. The
# values are not in string order in a segmented snapshot (store/snapshot.py): order by strings.
DIMENSIONS = {
    SUPPRESSIONS: ("keyword", "domain", "platform", "page_context", "country", "region", "county", "city"),
    KEYWORD_CHANGES: ("keyword", "action", "platform", "country"),
}

# The geographic levels of a suppression, coarsest first.
GEO_LEVELS = ("country", "region", "county", "city")

PLATFORMS = ("chrome", "firefox", "safari", "edge", "ios", "android", "other")
PAGE_CONTEXTS = ("feed", "search", "comments", "article", "video", "profile", "other")
ACTIONS = ("add", "remove", "edit")
