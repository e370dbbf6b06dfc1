"""The ClickHouse engine's cell keys packed into one UInt64 (engine/clickhouse/packing.py): the
answers equal those of grouping by the keys as they are (the path taken where they do not fit) and
the polars engine's, for every kind of key (dimensions, hour/day/week buckets, trending's period
flag), a nullable dimension's nulls included; and keys that do not fit are not packed."""

from __future__ import annotations

import datetime as dt

import pytest
from polars.testing import assert_frame_equal

from service.api.windows import TimeRange
from service.engine.clickhouse import dictionaries, packing
from service.engine.clickhouse.cells import Query, cells, time_literal
from service.engine.clickhouse.keys import dimension, flag, time_bucket
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.privacy import Privacy, PrivacyParams
from service.store import schema
from tests.support import engines
from tests.support import fixture_data as fx


@pytest.fixture(scope="module")
def fixture_snapshot(chdb_dir):
    frames = fx.fixture_frames()
    return frames, engines.land(frames, chdb_dir)


REQUESTS = [
    ("trending", Trending("7d", "domain", "suppressions", 50, 0.0)),
    ("trending", Trending("24h", "keyword", "unique_users", 50, 0.0)),
    ("query", FlexibleQuery("30d", {"countries": ("US", "DE")}, ("city", "platform"), None)),
    ("query", FlexibleQuery("90d", {}, ("keyword", "time"), "week")),
    ("query", FlexibleQuery("7d", {}, ("region", "time", "platform"), "hour")),
    ("query", FlexibleQuery("30d", {}, ("page_context", "time"), "day")),
]
ONE_KEY = [
    ("top_keywords", TopKeywords("30d", 50)),
    ("keyword_timeseries", KeywordTimeseries("crypto", "30d", "hour")),
    ("domain_timeseries", DomainTimeseries("reddit.com", "90d", "week")),
    ("geo_heat", GeoHeat("30d", "city")),
    ("keyword_activity", KeywordActivity("30d", "all", 50)),
]


@pytest.mark.parametrize(("endpoint", "request_"), REQUESTS)
def test_packed_keys_answer_as_the_keys_unpacked_and_as_polars(fixture_snapshot, monkeypatch, endpoint,
                                                               request_) -> None:
    frames, snapshot = fixture_snapshot
    engine = engines.ClickHouseEngine(Privacy.exact(), trending_confidence=0.0)
    planned: list[packing.Packed | None] = []
    plan = packing.plan
    monkeypatch.setattr(packing, "plan", lambda *args: planned.append(plan(*args)) or planned[-1])
    packed = getattr(engine, endpoint)(snapshot, fx.FIXTURE_AS_OF, request_)
    assert planned and all(p is not None for p in planned)
    monkeypatch.setattr(packing, "plan", lambda *_args: None)
    unpacked = getattr(engine, endpoint)(snapshot, fx.FIXTURE_AS_OF, request_)
    assert packed.height > 0
    assert_frame_equal(packed, unpacked)
    polars_engine = engines.PolarsEngine(Privacy.exact(), trending_confidence=0.0)
    assert_frame_equal(packed, getattr(polars_engine, endpoint)(frames, fx.FIXTURE_AS_OF, request_))


@pytest.mark.parametrize(("endpoint", "request_"), ONE_KEY)
def test_one_key_is_not_packed(fixture_snapshot, monkeypatch, endpoint, request_) -> None:
    """One key and `user_id` fit ClickHouse's fastest table as they are."""
    frames, snapshot = fixture_snapshot
    engine = engines.ClickHouseEngine(Privacy.exact())
    monkeypatch.setattr(packing, "plan", lambda *_args: pytest.fail("one key packed"))
    answer = getattr(engine, endpoint)(snapshot, fx.FIXTURE_AS_OF, request_)
    assert answer.height > 0
    assert_frame_equal(answer, getattr(engines.PolarsEngine(Privacy.exact()), endpoint)(frames, fx.FIXTURE_AS_OF,
                                                                                         request_))


def test_a_nullable_dimension_keeps_its_nulls_packed(fixture_snapshot, monkeypatch) -> None:
    """A dimension whose nulls the query keeps (no `not_null`) gets the all-ones code for null."""
    frames, snapshot = fixture_snapshot
    window = TimeRange(fx.FIXTURE_AS_OF - dt.timedelta(days=30), fx.FIXTURE_AS_OF)
    middle = window.start + dt.timedelta(days=20)
    query = Query(schema.SUPPRESSIONS, [dimension("region"), time_bucket("day"),
                                        flag("_recent", f"ts >= {time_literal(middle)}")], window)
    assert packing.plan(snapshot, query.table, query.keys, window) is not None
    packed, _ = cells(snapshot, query, PrivacyParams())
    monkeypatch.setattr(packing, "plan", lambda *_args: None)
    unpacked, _ = cells(snapshot, query, PrivacyParams())
    assert packed.get_column("region").null_count() > 0
    order = ["region", "ts", "_recent"]
    assert_frame_equal(packed.sort(order, nulls_last=True), unpacked.sort(order, nulls_last=True))


def test_keys_that_do_not_fit_are_not_packed(fixture_snapshot, monkeypatch) -> None:
    _, snapshot = fixture_snapshot
    window = TimeRange(fx.FIXTURE_AS_OF - dt.timedelta(days=30), fx.FIXTURE_AS_OF)
    keys = [dimension("keyword"), time_bucket("hour")]
    assert packing.plan(snapshot, schema.SUPPRESSIONS, keys, window) is not None
    known = dictionaries.values(snapshot, schema.SUPPRESSIONS, "keyword")
    assert known is not None and known.height > 2
    assert packing._dimension_bits(known, nullable=False, most=1) is None  # 1 bit cannot tell 3+ values apart
    # A dimension without a dictionary (two values share a hash): not packed.
    monkeypatch.setattr(dictionaries, "values", lambda *_args: None)
    assert packing.plan(snapshot, schema.SUPPRESSIONS, keys, window) is None
    assert packing.plan(snapshot, schema.SUPPRESSIONS, [time_bucket("day")], window) is not None


def test_a_dictionary_s_bits_are_fitted_once_per_frame(fixture_snapshot, monkeypatch) -> None:
    _, snapshot = fixture_snapshot
    known = dictionaries.values(snapshot, schema.SUPPRESSIONS, "city")
    assert known is not None
    first = packing._dimension_bits(known, True, 64)
    assert first is not None and packing._dimension_bits(known, True, 64) is first
    copy = known.clone()  # another generation's dictionary: another frame, fitted again
    again = packing._dimension_bits(copy, True, 64)
    assert again is not None and again is not first and again[0] == first[0]
