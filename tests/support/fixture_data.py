"""A small, hand-designed event data set with aggregates that can be stated exactly.

Used by the engine and store tests and by the HTTP tests: keep it stable. Changing a block
changes the EXPECTED_* constants below, which several test modules assert against.

Time: `FIXTURE_NOW` is 2026-03-10T12:34:56Z; the last event is at 12:20 (a keyword change), so
`windows.compute_as_of(FIXTURE_NOW, last_event)` gives `FIXTURE_AS_OF` = 2026-03-10T12:00Z.
With that as_of the windows are

    24h   [2026-03-09T12:00, 2026-03-10T12:00)   trending 24h: baseline [03-09T12, 03-10T06), recent [03-10T06, 12)
    7d    [2026-03-03T12:00, ...)                trending 7d:  baseline [03-03T12, 03-09T12), recent = the 24h window
    30d   [2026-02-08T12:00, ...)                trending 30d: baseline [02-08T12, 03-03T12), recent = the 7d window
    90d   [2025-12-10T12:00, ...)

The data is a list of blocks of regularly spaced events (one keyword each; users, domains,
platforms, page contexts and places cycle through the block's tuples), chosen so that:

* 24h top keywords are elon musk 80, snakes 72, weather 47, tiny 44, spoilers 42, ai art 30 and
  crypto 30 (a tie: "ai art" ranks first), bitcoin 15, fresh 3;
* "snakes" bursts in the last 6 hours (trending 1400 %), "bitcoin" and "crypto" tie at 50 %,
  "tiny" grows a lot from a baseline of 4 (below the default min_baseline 10) and "fresh" has no
  baseline at all;
* edges are exercised: events exactly at a window start (included) and at as_of (excluded),
  one microsecond before as_of, events after as_of, events in the part of the first day / ISO
  week bucket that lies before the window start (03-03T08:00 for 7d, 02-08T06:00 for 30d);
* geography is real: Los Angeles (US, US-CA, county 06037, GeoNames 5368361), New York
  (US, US-NY, 36061, 5128581), Berlin (DE, DE-BE, no county, 2950159) and a GB event with no
  finer geography.

User ids are small integers standing in for the keyed hashes the store keeps (UInt64).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from service.api.windows import TimeRange
from service.store import layout, schema
from service.store.reader import EventFrames, build_frames
from tests.support.landing import bump_generation

UTC = dt.UTC
FIXTURE_NOW = dt.datetime(2026, 3, 10, 12, 34, 56, tzinfo=UTC)
FIXTURE_AS_OF = dt.datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
FIXTURE_GENERATION = 1  # generation of `fixture_frames()`; write_fixture_store bumps the directory's


@dataclasses.dataclass(frozen=True)
class Place:
    country: str
    region: str | None
    county: str | None
    city: str | None


LOS_ANGELES = Place("US", "US-CA", "06037", "5368361")
NEW_YORK = Place("US", "US-NY", "36061", "5128581")
BERLIN = Place("DE", "DE-BE", None, "2950159")
GB_ONLY = Place("GB", None, None, None)

ALL_PLATFORMS = schema.PLATFORMS
ALL_PAGE_CONTEXTS = schema.PAGE_CONTEXTS


def _t(stamp: str) -> dt.datetime:
    """'2026-03-09T14:00' (or with seconds / microseconds) as an aware UTC datetime."""
    return dt.datetime.fromisoformat(stamp).replace(tzinfo=UTC)


def _every(start: str, minutes: float, count: int) -> tuple[dt.datetime, ...]:
    first = _t(start)
    return tuple(first + dt.timedelta(minutes=minutes * i) for i in range(count))


@dataclasses.dataclass(frozen=True)
class _Suppressions:
    keyword: str
    times: tuple[dt.datetime, ...]
    users: tuple[int, ...]
    suppressions: int
    domains: tuple[str, ...]
    platforms: tuple[str, ...]
    page_contexts: tuple[str, ...]
    places: tuple[Place, ...]


def _s(keyword, times, users, suppressions, domains, platforms, page_contexts, places) -> _Suppressions:
    def tup(value: Any) -> tuple:
        return value if isinstance(value, tuple) else (value,)

    return _Suppressions(keyword, times, tup(users), suppressions, tup(domains), tup(platforms), tup(page_contexts), tup(places))


_SUPPRESSION_BLOCKS = (
    # --- 24h window, trending-24h baseline part [03-09T12:00, 03-10T06:00)
    _s("elon musk", _every("2026-03-09T14:00", 60, 12), (1, 2, 3, 4), 5, "reddit.com", "chrome", "feed", LOS_ANGELES),
    _s("spoilers", _every("2026-03-09T15:30", 90, 10), (5, 6), 3, "youtube.com", "firefox", "video", BERLIN),
    _s("crypto", _every("2026-03-09T18:00", 60, 10), (1, 7), 2, "x.com", "safari", "search", NEW_YORK),
    _s("ai art", _every("2026-03-09T12:00", 120, 6), 8, 5, "reddit.com", "android", "comments", GB_ONLY),  # first at the 24h start
    _s("snakes", _every("2026-03-09T20:00", 90, 6), 9, 2, "reddit.com", "ios", "feed", LOS_ANGELES),
    _s("bitcoin", _every("2026-03-09T13:00", 180, 5), 10, 2, "x.com", "edge", "search", NEW_YORK),
    _s("tiny", _every("2026-03-10T00:00", 60, 2), 11, 2, "bbc.co.uk", "chrome", "article", GB_ONLY),
    # --- 24h window, trending-24h recent part [03-10T06:00, 03-10T12:00)
    _s("elon musk", _every("2026-03-10T06:00", 60, 4), (1, 2), 5, "reddit.com", "firefox", "comments", NEW_YORK),
    _s("snakes", _every("2026-03-10T06:15", 15, 20), (9, 10, 11, 12), 3, "tiktok.com", "android", "video", LOS_ANGELES),
    _s("crypto", _every("2026-03-10T07:00", 60, 5), 7, 2, "x.com", "safari", "search", NEW_YORK),
    _s("spoilers", _every("2026-03-10T08:00", 30, 4), 5, 3, "youtube.com", "firefox", "video", BERLIN),
    _s("bitcoin", (_t("2026-03-10T10:00"),), 10, 5, "x.com", "edge", "search", NEW_YORK),
    _s("tiny", _every("2026-03-10T09:00", 15, 8), 11, 5, "bbc.co.uk", "chrome", "article", GB_ONLY),
    _s("fresh", (_t("2026-03-10T11:00"), _t("2026-03-10T11:30"), _t("2026-03-10T11:59:59.999999")), 12, 1,
       "bbc.co.uk", "safari", "article", BERLIN),
    # --- background across the 24h window: every user, domain, platform, context and place
    _s("weather", _every("2026-03-09T12:30", 30, 47), tuple(range(1, 16)), 1,
       ("reddit.com", "youtube.com", "x.com", "bbc.co.uk", "spiegel.de"), ALL_PLATFORMS, ALL_PAGE_CONTEXTS,
       (LOS_ANGELES, NEW_YORK, BERLIN, GB_ONLY)),
    # --- at and after as_of: in no window
    _s("elon musk", (_t("2026-03-10T12:00"),), 1, 100, "reddit.com", "chrome", "feed", LOS_ANGELES),
    _s("elon musk", (_t("2026-03-10T12:10"),), 13, 100, "reddit.com", "chrome", "feed", LOS_ANGELES),
    # --- 7d window before the last 24h (trending-7d baseline)
    _s("elon musk", _every("2026-03-05T10:00", 60, 30), (1, 2, 3, 4, 5, 6), 4, "reddit.com", "chrome", "feed", LOS_ANGELES),
    _s("spoilers", _every("2026-03-06T00:00", 120, 12), (5, 6, 13), 3, "youtube.com", "firefox", "video", BERLIN),
    _s("crypto", _every("2026-03-04T09:00", 60, 24), (1, 7, 14), 2, "x.com", "safari", "search", NEW_YORK),
    _s("snakes", _every("2026-03-07T12:00", 60, 6), 9, 2, "reddit.com", "ios", "feed", LOS_ANGELES),
    # 03-03 is the first day bucket of the 7d window; only its part from 12:00 is inside
    _s("elon musk", (_t("2026-03-03T08:00"),), 2, 7, "reddit.com", "chrome", "feed", LOS_ANGELES),
    _s("elon musk", (_t("2026-03-03T13:00"),), 3, 9, "reddit.com", "chrome", "feed", LOS_ANGELES),
    # --- 30d window before the last 7d (trending-30d baseline)
    _s("elon musk", _every("2026-02-15T00:00", 1440, 10), (1, 2, 3, 4, 5), 10, "reddit.com", "chrome", "feed", LOS_ANGELES),
    _s("spoilers", _every("2026-02-20T12:00", 720, 8), (5, 6), 3, "youtube.com", "firefox", "video", BERLIN),
    _s("crypto", _every("2026-02-10T00:00", 1440, 20), (7, 14), 3, "x.com", "safari", "search", NEW_YORK),
    # the ISO week of Monday 02-02 is the first week bucket of the 30d window (start: Sunday 02-08T12:00)
    _s("elon musk", (_t("2026-02-08T06:00"),), 4, 11, "reddit.com", "chrome", "feed", LOS_ANGELES),
    _s("elon musk", (_t("2026-02-08T18:00"),), 4, 13, "reddit.com", "chrome", "feed", LOS_ANGELES),
    # --- 90d window before the last 30d
    _s("elon musk", _every("2026-01-05T09:00", 1440, 10), (1, 2), 2, "reddit.com", "chrome", "feed", LOS_ANGELES),
    _s("crypto", _every("2025-12-20T00:00", 1440, 5), 7, 4, "x.com", "safari", "search", NEW_YORK),
    _s("elon musk", (_t("2025-12-10T11:00"),), 1, 50, "reddit.com", "chrome", "feed", LOS_ANGELES),  # before 90d
    _s("elon musk", (_t("2025-12-10T12:00"),), 15, 1, "reddit.com", "chrome", "feed", LOS_ANGELES),  # 90d start
)


@dataclasses.dataclass(frozen=True)
class _Changes:
    keyword: str
    times: tuple[dt.datetime, ...]
    users: tuple[int, ...]
    actions: tuple[str, ...]
    platforms: tuple[str, ...]
    countries: tuple[str, ...]


def _c(keyword, times, users, actions, platforms, countries) -> _Changes:
    def tup(value: Any) -> tuple:
        return value if isinstance(value, tuple) else (value,)

    return _Changes(keyword, times, tup(users), tup(actions), tup(platforms), tup(countries))


_CHANGE_BLOCKS = (
    # --- 24h window
    _c("elon musk", _every("2026-03-09T13:00", 60, 10), (1, 2, 3, 4, 5), "add", "chrome", "US"),
    _c("elon musk", _every("2026-03-10T02:00", 60, 4), (1, 2), "remove", "chrome", "US"),
    _c("elon musk", _every("2026-03-10T08:00", 60, 2), 3, "edit", "firefox", "US"),
    _c("spoilers", _every("2026-03-09T20:00", 30, 6), (5, 6), "add", "firefox", "DE"),
    _c("spoilers", _every("2026-03-10T05:00", 10, 6), (5, 6, 13), "remove", "firefox", "DE"),
    _c("crypto", _every("2026-03-10T01:00", 60, 5), (7, 14), "remove", "safari", "US"),
    _c("crypto", (_t("2026-03-10T09:00"),), 7, "edit", "safari", "US"),
    _c("snakes", _every("2026-03-10T06:00", 30, 8), (9, 10, 11, 12), "add", "ios", "US"),
    _c("snakes", _every("2026-03-10T10:00", 10, 3), 9, "edit", "ios", "US"),
    _c("ai art", _every("2026-03-09T12:00", 60, 6), 8, "add", "android", "GB"),  # first at the 24h start
    _c("weather", _every("2026-03-09T12:30", 30, 47), tuple(range(1, 16)), ("add", "add", "remove", "edit"),
       ALL_PLATFORMS, ("US", "DE", "GB")),
    # --- just before the 24h window, at as_of, after as_of
    _c("elon musk", (_t("2026-03-09T11:59:59"),), 1, "add", "chrome", "US"),
    _c("elon musk", (_t("2026-03-10T12:00"),), 2, "add", "chrome", "US"),
    _c("elon musk", (_t("2026-03-10T12:20"),), 3, "add", "chrome", "US"),
    # --- 7d, 30d, 90d
    _c("elon musk", _every("2026-03-05T00:00", 60, 20), tuple(range(1, 11)), "remove", "chrome", "US"),
    _c("news", _every("2026-03-04T00:00", 20, 150), tuple(range(1, 16)), ("add", "remove", "edit", "add", "add"),
       ALL_PLATFORMS, ("US", "DE", "GB")),
    _c("spoilers", _every("2026-02-20T00:00", 120, 30), (5, 6, 13, 14, 15), "add", "firefox", "DE"),
    _c("crypto", _every("2026-01-10T00:00", 1440, 10), 7, "add", "safari", "US"),
)


def _cycle(values: Sequence[Any], i: int) -> Any:
    return values[i % len(values)]


def suppression_rows() -> list[dict[str, Any]]:
    """Every suppression event as a plain dict (stored column names), in block order."""
    rows = []
    for block in _SUPPRESSION_BLOCKS:
        for i, ts in enumerate(block.times):
            place: Place = _cycle(block.places, i)
            rows.append({
                "ts": ts,
                "user_id": _cycle(block.users, i),
                "keyword": block.keyword,
                "domain": _cycle(block.domains, i),
                "platform": _cycle(block.platforms, i),
                "page_context": _cycle(block.page_contexts, i),
                "country": place.country,
                "region": place.region,
                "county": place.county,
                "city": place.city,
                "suppressions": block.suppressions,
            })
    return rows


def keyword_change_rows() -> list[dict[str, Any]]:
    """Every keyword-list change as a plain dict (stored column names), in block order."""
    rows = []
    for block in _CHANGE_BLOCKS:
        for i, ts in enumerate(block.times):
            rows.append({
                "ts": ts,
                "user_id": _cycle(block.users, i),
                "keyword": block.keyword,
                "action": _cycle(block.actions, i),
                "platform": _cycle(block.platforms, i),
                "country": _cycle(block.countries, i),
            })
    return rows


def suppressions_frame() -> pl.DataFrame:
    """The suppressions table in the stored schema (String dimensions, user_id UInt64), unsorted."""
    return pl.DataFrame(suppression_rows(), schema=schema.SUPPRESSIONS_SCHEMA)


def keyword_changes_frame() -> pl.DataFrame:
    """The keyword_changes table in the stored schema, unsorted."""
    return pl.DataFrame(keyword_change_rows(), schema=schema.KEYWORD_CHANGES_SCHEMA)


def fixture_frames() -> EventFrames:
    """The fixture as the store serves it (Enum dimensions, sorted), without touching disk."""
    return build_frames(suppressions_frame(), keyword_changes_frame(), FIXTURE_GENERATION)


def write_fixture_store(data_dir: Path) -> None:
    """Write both tables as day partitions (`date=YYYY-MM-DD/part-fixture.parquet`), then bump
    the data generation, as an ingest would."""
    for table, frame in ((schema.SUPPRESSIONS, suppressions_frame()), (schema.KEYWORD_CHANGES, keyword_changes_frame())):
        write_partitions(data_dir, table, frame, "part-fixture.parquet")
    bump_generation(data_dir)


def write_partitions(data_dir: Path, table: str, frame: pl.DataFrame, file_name: str) -> None:
    """Write `frame` (stored schema) as one file per UTC day under the table's partitions."""
    days = frame.with_columns(pl.col("ts").dt.date().alias("_day"))
    for (day,), part in days.group_by("_day"):
        target = layout.partition_dir(data_dir, table, day.isoformat())
        target.mkdir(parents=True, exist_ok=True)
        part.drop("_day").write_parquet(target / file_name)


def rows_in(rows: Iterable[dict[str, Any]], time_range: TimeRange) -> list[dict[str, Any]]:
    """The rows with start <= ts < end (for naive reference computations in tests)."""
    return [row for row in rows if time_range.start <= row["ts"] < time_range.end]


# --- Expected aggregates, worked out by hand from the blocks above (tests check them against a
# naive computation over the rows as well). Privacy here is the identity stage (no noise yet).

# GET /top-keywords?window=24h: (keyword_raw, suppressions, users_est), rank = position + 1
EXPECTED_TOP_KEYWORDS_24H = (
    ("elon musk", 80, 4),
    ("snakes", 72, 4),
    ("weather", 47, 15),
    ("tiny", 44, 1),
    ("spoilers", 42, 2),
    ("ai art", 30, 1),
    ("crypto", 30, 2),
    ("bitcoin", 15, 1),
    ("fresh", 3, 1),
)

# GET /keyword-timeseries?keyword=elon musk&window=7d&bucket=day: (bucket start, suppressions, users_est, events)
EXPECTED_ELON_MUSK_7D_DAYS = (
    (_t("2026-03-03T00:00"), 9, 1, 1),  # the 08:00 event of that day is before the window
    (_t("2026-03-04T00:00"), 0, 0, 0),
    (_t("2026-03-05T00:00"), 56, 6, 14),
    (_t("2026-03-06T00:00"), 64, 6, 16),
    (_t("2026-03-07T00:00"), 0, 0, 0),
    (_t("2026-03-08T00:00"), 0, 0, 0),
    (_t("2026-03-09T00:00"), 50, 4, 10),
    (_t("2026-03-10T00:00"), 30, 4, 6),
)

# GET /geo-heat?window=24h&level=country: (geo_key, suppressions, unique_users, keyword_count)
EXPECTED_GEO_COUNTRIES_24H = (
    ("US", 221, 15, 5),
    ("GB", 85, 12, 3),
    ("DE", 57, 13, 3),
)

# GET /trending?dimension=keyword&metric=suppressions (min_baseline 10): (value, recent, baseline, growth_pct)
EXPECTED_TRENDING_24H = (
    ("snakes", 60, 12, 1400.0),
    ("bitcoin", 5, 10, 50.0),
    ("crypto", 10, 20, 50.0),
    ("spoilers", 12, 30, 20.0),
    ("weather", 12, 35, 2.86),
    ("elon musk", 20, 60, 0.0),
    ("ai art", 0, 30, -100.0),
)
EXPECTED_TRENDING_7D = (
    ("snakes", 72, 12, 3500.0),
    ("spoilers", 42, 36, 600.0),
    ("crypto", 30, 48, 275.0),
    ("elon musk", 80, 129, 272.09),
)
EXPECTED_TRENDING_30D = (
    ("spoilers", 78, 24, 967.86),
    ("elon musk", 209, 120, 472.26),
    ("crypto", 78, 60, 327.14),
)

# GET /keyword-activity?window=24h&type=all:
# (keyword, adds, removes, edits, total_events, unique_users, net_adds), in answer order
EXPECTED_KEYWORD_ACTIVITY_24H = (
    ("weather", 24, 12, 11, 47, 15, 12),
    ("elon musk", 10, 4, 2, 16, 5, 6),
    ("spoilers", 6, 6, 0, 12, 3, 0),
    ("snakes", 8, 0, 3, 11, 4, 8),
    ("ai art", 6, 0, 0, 6, 1, 6),
    ("crypto", 0, 5, 1, 6, 2, -5),
)

# POST /query {"window": "24h"} (empty group_by): suppressions, unique_users, events
EXPECTED_QUERY_TOTALS_24H = (363, 15, 143)
