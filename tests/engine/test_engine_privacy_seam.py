"""Every engine query publishes its cells through `Privacy.publish` exactly once, and derives
ranks, orders, filters and derived numbers from what came back (which may differ or miss rows)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import polars as pl
import pytest

from service.api.windows import trending_periods, window_range
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.privacy import PILOT, SUMMED, CellContext, Contributions, Privacy, PrivacyParams
from tests.support import fixture_data as fx
from tests.support.engines import Engine

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

UTC = dt.UTC
AS_OF = fx.FIXTURE_AS_OF


class Recording(Privacy):
    """The exact stage (no noise), plus a record of every call and an optional rewrite of its output."""

    def __init__(self, rewrite: Callable[[pl.DataFrame], pl.DataFrame] = lambda frame: frame) -> None:
        super().__init__("exact", PrivacyParams.exact())
        self.calls: list[tuple[pl.DataFrame, CellContext]] = []
        self.rewrite = rewrite

    def publish(self, frame: pl.DataFrame, cell: CellContext, contributions: Contributions | None = None,
                noise_std: bool = False, family: pl.DataFrame | None = None) -> pl.DataFrame:
        self.calls.append((frame, cell))
        return self.rewrite(super().publish(frame, cell, contributions, noise_std, family))


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


W24 = window_range("24h", AS_OF)
W7 = window_range("7d", AS_OF)
P7 = trending_periods("7d", AS_OF)
CELL = {"suppressions": "suppressions", "unique_users": "unique_users", "events": "events"}

# method, request, (table, dims, {published column: measure}, time range, bucket, fixed constraints)
CALLS = [
    ("top_keywords", TopKeywords("24h", 5),
     # events: only to bound the user count (publication/reconcile.py), not shown
     ("suppressions", ("keyword",), {"suppressions": "suppressions", "unique_users": "unique_users",
                                     "events": "events"}, W24, None, {})),
    ("keyword_timeseries", KeywordTimeseries("snakes", "7d", "day"),
     ("suppressions", ("keyword", "ts"), CELL, W7, "day", {})),
    ("domain_timeseries", DomainTimeseries("x.com", "24h", "hour"),
     ("suppressions", ("domain", "ts"), CELL, W24, "hour", {})),
    ("geo_heat", GeoHeat("24h", "city"),
     ("suppressions", ("city",), {"suppressions": "suppressions", "unique_users": "unique_users",
                                  "keyword_count": "keyword_count", "events": "events"}, W24, None, {})),
    ("trending", Trending("7d", "domain", "events", 5, 10),
     ("suppressions", ("domain",), {"recent": "events", "baseline": "events"}, W7, None, {})),
    ("keyword_activity", KeywordActivity("24h", "added", 3),
     ("keyword_changes", ("keyword",), {"unique_users": "unique_users", "adds": "events", "removes": "events",
                                        "edits": "events"}, W24, None, {})),
    ("query", FlexibleQuery("7d", {"countries": ("US",)}, ("county", "time", "platform"), "day", limit=4),
     ("suppressions", ("county", "ts", "platform"), CELL, W7, "day", {"country": ("US",)})),
    ("query", FlexibleQuery("24h", {}, (), None), ("suppressions", (), CELL, W24, None, {})),
    ("query", FlexibleQuery("24h", {}, ("keyword",), "week"),  # bucket without time: not a cell property
     ("suppressions", ("keyword",), CELL, W24, None, {})),
]


@pytest.mark.parametrize(("method", "req", "expected"), CALLS, ids=[c[0] for c in CALLS])
def test_publish_is_called_once_with_the_cells(frames, method: str, req, expected) -> None:
    table, dims, measures, time_range, bucket, fixed = expected
    privacy = Recording()
    getattr(Engine(privacy), method)(frames, AS_OF, req)
    assert len(privacy.calls) == 1
    frame, cell = privacy.calls[0]
    assert (cell.table, tuple(cell.dims), cell.time_range, cell.bucket) == (table, dims, time_range, bucket)
    assert dict(cell.fixed) == fixed
    assert {p.column: p.measure for p in cell.published} == measures
    # A summed measure arrives as its pilot sum (its capped sum comes from the contributions).
    inputs = {p.column + PILOT if p.measure in SUMMED else p.column for p in cell.published}
    assert set(dims) | inputs | {p.users for p in cell.published} <= set(frame.columns)
    # Cells are described by plain values, never by per-process Categorical codes.
    assert all(frame.schema[dim] in (pl.String, pl.Datetime("us", "UTC")) for dim in dims)


def test_trending_periods_are_cells_of_their_own(frames) -> None:
    privacy = Recording()
    Engine(privacy).trending(frames, AS_OF, Trending("7d", "keyword", "suppressions", 5, 10))
    _, cell = privacy.calls[0]
    periods = {p.column: (p.period, p.users) for p in cell.published}
    assert periods == {"recent": (P7.recent, "recent_users"), "baseline": (P7.baseline, "baseline_users")}


def _drop(column: str, value: str) -> Callable[[pl.DataFrame], pl.DataFrame]:
    return lambda frame: frame.filter(pl.col(column) != value)


def test_rank_is_computed_from_what_was_published(frames) -> None:
    dropped = Engine(Recording(_drop("keyword", "elon musk"))).top_keywords(frames, AS_OF, TopKeywords("24h", 3))
    assert dropped.rows() == [("snakes", 72, 4, 1), ("weather", 47, 15, 2), ("tiny", 44, 1, 3)]
    boosted = Engine(Recording(lambda f: f.with_columns(
        pl.when(pl.col("keyword") == "fresh").then(500).otherwise(pl.col("suppressions")).alias("suppressions")
    ))).top_keywords(frames, AS_OF, TopKeywords("24h", 2))
    assert boosted.rows() == [("fresh", 500, 1, 1), ("elon musk", 80, 4, 2)]


def test_a_withheld_bucket_is_still_listed_as_zero(frames) -> None:
    engine = Engine(Recording(lambda f: f.filter(pl.col("ts") != dt.datetime(2026, 3, 9, tzinfo=UTC))))
    result = engine.keyword_timeseries(frames, AS_OF, KeywordTimeseries("elon musk", "24h", "day"))
    assert result.rows() == [(dt.datetime(2026, 3, 9, tzinfo=UTC), 0, 0, 0), (dt.datetime(2026, 3, 10, tzinfo=UTC), 30, 4, 6)]


def test_empty_buckets_are_published_too(frames) -> None:
    # A privacy stage may show something other than 0 for an empty cell; the engine shows what it published.
    engine = Engine(Recording(lambda f: f.with_columns(pl.col("events") + 1)))
    result = engine.domain_timeseries(frames, AS_OF, DomainTimeseries("unknown.example", "24h", "hour"))
    assert result.height == 24 and result.get_column("events").to_list() == [1] * 24


def test_trending_filters_and_growth_use_published_numbers(frames) -> None:
    # tiny's true baseline is 4 (below min_baseline 10); published as 10 it qualifies, with its
    # growth computed from 40 and 10: 100 * (40/6 - 10/18) / (10/18) = 1100.
    lift = lambda f: f.with_columns(  # noqa: E731
        pl.when(pl.col("keyword") == "tiny").then(10).otherwise(pl.col("baseline")).alias("baseline")
    )
    result = Engine(Recording(lift), trending_confidence=0).trending(
        frames, AS_OF, Trending("24h", "keyword", "suppressions", 50, 10))
    assert result.row(0) == ("snakes", 60, 12, 1400.0)
    assert result.row(1) == ("tiny", 40, 10, 1100.0)
    withheld = Engine(Recording(_drop("keyword", "snakes")), trending_confidence=0).trending(
        frames, AS_OF, Trending("24h", "keyword", "suppressions", 1, 10)
    )
    assert withheld.rows() == [("bitcoin", 5, 10, 50.0)]


def test_activity_invariants_hold_on_published_numbers(frames) -> None:
    noisy = lambda f: f.with_columns(pl.col("adds") + 1, pl.col("removes") + 2, pl.col("edits") + 3)  # noqa: E731
    result = Engine(Recording(noisy)).keyword_activity(frames, AS_OF, KeywordActivity("24h", "all", 50))
    crypto = result.filter(pl.col("keyword") == "crypto").row(0)
    assert crypto == ("crypto", 1, 7, 4, 12, 2, -6)
    assert (result["total_events"] == result["adds"] + result["removes"] + result["edits"]).all()
    # with the offsets every keyword has edits > 0 now: "edited" selects from published counts
    edited = Engine(Recording(noisy)).keyword_activity(frames, AS_OF, KeywordActivity("24h", "edited", 50))
    assert edited.height == 6


def test_query_orders_and_limits_after_publishing(frames) -> None:
    engine = Engine(Recording(_drop("keyword", "elon musk")))
    result = engine.query(frames, AS_OF, FlexibleQuery("24h", {}, ("keyword",), None, limit=2))
    assert result.select("keyword", "suppressions").rows() == [("snakes", 72), ("weather", 47)]


def test_geo_heat_orders_after_publishing(frames) -> None:
    swap = lambda f: f.with_columns(  # noqa: E731
        pl.when(pl.col("country") == "DE").then(1000).otherwise(pl.col("suppressions")).alias("suppressions")
    )
    result = Engine(Recording(swap)).geo_heat(frames, AS_OF, GeoHeat("24h", "country"))
    assert result.get_column("geo_key").to_list() == ["DE", "US", "GB"]
