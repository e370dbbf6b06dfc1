"""Time slicing by binary search over the ts-sorted tables."""

from __future__ import annotations

import datetime as dt

import pytest

from service.api.windows import TimeRange, window_range
from service.engine.polars.slicing import time_slice
from tests.support import fixture_data as fx

UTC = dt.UTC


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


@pytest.mark.parametrize("window", ["1h", "6h", "12h", "24h", "7d", "30d", "90d"])
def test_window_slices_hold_exactly_the_rows_in_range(frames, window: str) -> None:
    time_range = window_range(window, fx.FIXTURE_AS_OF)
    for table, rows in (("suppressions", fx.suppression_rows()), ("keyword_changes", fx.keyword_change_rows())):
        sliced = time_slice(getattr(frames, table), time_range)
        expected = sorted(row["ts"] for row in fx.rows_in(rows, time_range))
        assert sliced.get_column("ts").to_list() == expected


def test_start_is_inclusive_and_end_exclusive(frames) -> None:
    at = dt.datetime(2026, 3, 10, 12, tzinfo=UTC)  # an elon musk event sits exactly here
    just_before = at - dt.timedelta(microseconds=1)  # and a "fresh" event one microsecond earlier
    after = time_slice(frames.suppressions, TimeRange(at, at + dt.timedelta(minutes=1)))
    assert after.select("ts", "keyword").rows() == [(at, "elon musk")]
    before = time_slice(frames.suppressions, TimeRange(at - dt.timedelta(minutes=1), at))
    assert before.select("ts", "keyword").rows() == [(just_before, "fresh")]


def test_ranges_outside_the_data_and_empty_tables(frames) -> None:
    before = TimeRange(dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2020, 1, 2, tzinfo=UTC))
    after = TimeRange(dt.datetime(2030, 1, 1, tzinfo=UTC), dt.datetime(2030, 1, 2, tzinfo=UTC))
    assert time_slice(frames.suppressions, before).height == 0
    assert time_slice(frames.suppressions, after).height == 0
    empty = frames.suppressions.clear()
    assert time_slice(empty, window_range("24h", fx.FIXTURE_AS_OF)).height == 0
    inverted = TimeRange(after.end, before.start)
    assert time_slice(frames.suppressions, inverted).height == 0


def test_fixture_as_of_follows_from_the_data(frames) -> None:
    from service.api.windows import compute_as_of

    assert compute_as_of(fx.FIXTURE_NOW, frames.last_event) == fx.FIXTURE_AS_OF


@pytest.mark.parametrize(("moment", "expected"), [
    (dt.datetime(2026, 11, 27, 3, 0, tzinfo=UTC), dt.datetime(2026, 11, 27, 4, 0, tzinfo=UTC)),
    (dt.datetime(2026, 11, 27, 3, 59, 59, 999999, tzinfo=UTC), dt.datetime(2026, 11, 27, 4, 0, tzinfo=UTC)),
    (dt.datetime(2026, 11, 27, 23, 30, tzinfo=UTC), dt.datetime(2026, 11, 28, 0, 0, tzinfo=UTC)),
    # An aware time in another zone: its UTC hour
    (dt.datetime(2026, 11, 27, 5, 30, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
     dt.datetime(2026, 11, 27, 1, 0, tzinfo=UTC)),
])
def test_hour_end_is_the_first_as_of_that_counts_an_event(moment: dt.datetime, expected: dt.datetime) -> None:
    from service.api.windows import compute_as_of, hour_end

    assert hour_end(moment) == expected
    # An event at `moment` is in the windows of as_of = hour_end, not before.
    assert compute_as_of(expected, moment) == expected
    assert compute_as_of(expected - dt.timedelta(microseconds=1), moment) < expected
