"""Keyword and domain timeseries: bucket list, zero-filling, window edges inside buckets."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.api.windows import bucket_start, bucket_starts, window_range
from service.engine.requests import DomainTimeseries, KeywordTimeseries
from service.privacy import Privacy
from tests.support import fixture_data as fx
from tests.support.engines import Engine

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

UTC = dt.UTC
SCHEMA = {"ts": pl.Datetime("us", "UTC"), "suppressions": pl.Int64, "users_est": pl.Int64, "events": pl.Int64}


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


def keyword_series(frames, keyword: str, window: str, bucket: str) -> pl.DataFrame:
    return Engine(Privacy.exact()).keyword_timeseries(frames, fx.FIXTURE_AS_OF, KeywordTimeseries(keyword, window, bucket))


def domain_series(frames, domain: str, window: str, bucket: str) -> pl.DataFrame:
    return Engine(Privacy.exact()).domain_timeseries(frames, fx.FIXTURE_AS_OF, DomainTimeseries(domain, window, bucket))


def naive(column: str, value: str, window: str, bucket: str) -> pl.DataFrame:
    """Per bucket start (the Python definition in `windows`): totals of the rows inside the window."""
    time_range = window_range(window, fx.FIXTURE_AS_OF)
    suppressions: dict[dt.datetime, int] = defaultdict(int)
    events: dict[dt.datetime, int] = defaultdict(int)
    users: dict[dt.datetime, set[int]] = defaultdict(set)
    for row in fx.rows_in(fx.suppression_rows(), time_range):
        if row[column] == value:
            start = bucket_start(row["ts"], bucket)
            suppressions[start] += row["suppressions"]
            events[start] += 1
            users[start].add(row["user_id"])
    starts = bucket_starts(time_range, bucket)
    return pl.DataFrame(
        {
            "ts": starts,
            "suppressions": [suppressions[s] for s in starts],
            "users_est": [len(users[s]) for s in starts],
            "events": [events[s] for s in starts],
        },
        schema=SCHEMA,
    )


def test_elon_musk_7d_by_day_matches_the_hand_computed_series(frames) -> None:
    expected = pl.DataFrame(fx.EXPECTED_ELON_MUSK_7D_DAYS, schema=SCHEMA, orient="row")
    assert_frame_equal(keyword_series(frames, "elon musk", "7d", "day"), expected)
    assert_frame_equal(naive("keyword", "elon musk", "7d", "day"), expected)


@pytest.mark.parametrize("window", ["24h", "7d", "30d", "90d"])
@pytest.mark.parametrize("bucket", ["hour", "day", "week"])
@pytest.mark.parametrize("keyword", ["elon musk", "snakes", "weather"])
def test_keyword_series_match_a_naive_count(frames, keyword: str, window: str, bucket: str) -> None:
    assert_frame_equal(keyword_series(frames, keyword, window, bucket), naive("keyword", keyword, window, bucket))


@pytest.mark.parametrize("window", ["24h", "7d", "30d", "90d"])
@pytest.mark.parametrize("bucket", ["hour", "day", "week"])
@pytest.mark.parametrize("domain", ["reddit.com", "x.com", "spiegel.de"])
def test_domain_series_match_a_naive_count(frames, domain: str, window: str, bucket: str) -> None:
    assert_frame_equal(domain_series(frames, domain, window, bucket), naive("domain", domain, window, bucket))


def test_hourly_24h_lists_every_hour_zero_filled(frames) -> None:
    result = keyword_series(frames, "bitcoin", "24h", "hour")
    assert result.height == 24
    assert result.get_column("ts")[0] == dt.datetime(2026, 3, 9, 12, tzinfo=UTC)
    assert result.get_column("ts")[-1] == dt.datetime(2026, 3, 10, 11, tzinfo=UTC)
    assert result.get_column("ts").diff().drop_nulls().unique().to_list() == [dt.timedelta(hours=1)]
    busy = result.filter(pl.col("events") > 0)
    # every 3 h from 13:00 to 01:00 (2 each), and 5 at 10:00
    assert busy.rows() == [
        (dt.datetime(2026, 3, 9, 13, tzinfo=UTC), 2, 1, 1),
        (dt.datetime(2026, 3, 9, 16, tzinfo=UTC), 2, 1, 1),
        (dt.datetime(2026, 3, 9, 19, tzinfo=UTC), 2, 1, 1),
        (dt.datetime(2026, 3, 9, 22, tzinfo=UTC), 2, 1, 1),
        (dt.datetime(2026, 3, 10, 1, tzinfo=UTC), 2, 1, 1),
        (dt.datetime(2026, 3, 10, 10, tzinfo=UTC), 5, 1, 1),
    ]
    assert result.filter(pl.col("events") == 0).select(pl.exclude("ts")).sum().row(0) == (0, 0, 0)


def test_day_buckets_count_only_the_part_inside_the_window(frames) -> None:
    # 24h window [03-09T12:00, 03-10T12:00): two day buckets, both sticking out of the window.
    result = keyword_series(frames, "elon musk", "24h", "day")
    assert result.rows() == [
        (dt.datetime(2026, 3, 9, tzinfo=UTC), 50, 4, 10),   # 03-09T14:00..23:00
        (dt.datetime(2026, 3, 10, tzinfo=UTC), 30, 4, 6),   # not the 12:00 and 12:10 events (100 each)
    ]


def test_week_buckets_start_on_monday_and_clip_to_the_window(frames) -> None:
    # 30d window starts Sunday 2026-02-08T12:00: the first ISO week is Monday 02-02, and of the
    # two elon musk events on 02-08 only the one at 18:00 (13) is inside.
    result = keyword_series(frames, "elon musk", "30d", "week")
    starts = result.get_column("ts").to_list()
    assert starts[0] == dt.datetime(2026, 2, 2, tzinfo=UTC)
    assert starts[-1] == dt.datetime(2026, 3, 9, tzinfo=UTC)
    assert all(start.weekday() == 0 and start.hour == 0 for start in starts)
    assert result.row(0) == (dt.datetime(2026, 2, 2, tzinfo=UTC), 13, 1, 1)
    # 90d window starts Wednesday 2025-12-10T12:00: 11:00 that day is out, 12:00 exactly is in.
    first = keyword_series(frames, "elon musk", "90d", "week").row(0)
    assert first == (dt.datetime(2025, 12, 8, tzinfo=UTC), 1, 1, 1)


def test_unknown_keyword_is_all_zeros_not_an_error(frames) -> None:
    result = keyword_series(frames, "no such keyword", "7d", "day")
    starts = bucket_starts(window_range("7d", fx.FIXTURE_AS_OF), "day")
    expected = pl.DataFrame(
        {"ts": starts, "suppressions": [0] * 8, "users_est": [0] * 8, "events": [0] * 8}, schema=SCHEMA
    )
    assert_frame_equal(result, expected)
    assert_frame_equal(domain_series(frames, "unknown.example", "7d", "day"), expected)


def test_the_last_microsecond_before_as_of_counts(frames) -> None:
    result = keyword_series(frames, "fresh", "24h", "hour")
    assert result.row(-1) == (dt.datetime(2026, 3, 10, 11, tzinfo=UTC), 3, 1, 3)
