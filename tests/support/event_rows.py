"""Event rows as producers send them (before validation and normalisation), for the ingest
contract's and ingest's tests: one valid row of each table, changed field by field."""

from __future__ import annotations

from typing import Any

SUPPRESSION: dict[str, Any] = {
    "ts": "2025-06-01T10:00:00Z",
    "user_id": "install-1",
    "keyword": "spoilers",
    "domain": "reddit.com",
    "platform": "chrome",
    "page_context": "feed",
    "country": "US",
    "region": "US-CA",
    "county": "06037",
    "city": "5368361",
    "suppressions": 3,
}
CHANGE: dict[str, Any] = {
    "ts": "2025-06-01T10:00:00Z",
    "user_id": "install-1",
    "keyword": "spoilers",
    "action": "add",
    "platform": "firefox",
    "country": "DE",
}


def suppression(**changes: Any) -> dict[str, Any]:
    """A valid suppressions row (Los Angeles, 2025-06-01T10:00Z) with `changes`."""
    return {**SUPPRESSION, **changes}


def change(**changes: Any) -> dict[str, Any]:
    """A valid keyword_changes row with `changes`."""
    return {**CHANGE, **changes}
