"""GET /trending in the engine: periods, metrics, min_baseline, growth formula, order, limit."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.api.windows import TimeRange, trending_periods
from service.engine.requests import Trending
from service.privacy import Privacy
from service.store.reader import build_frames
from tests.support import fixture_data as fx
from tests.support.engines import Engine
from tests.support.growth import growth_pct

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

SCHEMA = {"value": pl.String, "recent": pl.Int64, "baseline": pl.Int64, "growth_pct": pl.Float64}


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


def run(frames, window="24h", dimension="keyword", metric="suppressions", limit=50, min_baseline=10.0, as_of=None):
    req = Trending(window=window, dimension=dimension, metric=metric, limit=limit, min_baseline=min_baseline)
    # Confidence 0: the arithmetic of periods, metrics and growth, ranked by plain growth (the lower
    # bound that ranks by default is tested in test_engine_trending_confidence.py).
    return Engine(Privacy.exact(), trending_confidence=0).trending(frames, as_of or fx.FIXTURE_AS_OF, req)


def _totals(period: TimeRange, dimension: str, metric: str) -> dict[str, int]:
    sums: dict[str, int] = defaultdict(int)
    users: dict[str, set[int]] = defaultdict(set)
    for row in fx.rows_in(fx.suppression_rows(), period):
        value = row[dimension]
        sums[value] += row["suppressions"] if metric == "suppressions" else 1
        users[value].add(row["user_id"])
    if metric == "unique_users":
        return {value: len(ids) for value, ids in users.items()}
    return dict(sums)


def naive(window: str, dimension: str, metric: str, limit: int, min_baseline: float, as_of=fx.FIXTURE_AS_OF):
    periods = trending_periods(window, as_of)
    recent = _totals(periods.recent, dimension, metric)
    baseline = _totals(periods.baseline, dimension, metric)
    rows = []
    for value in set(recent) | set(baseline):
        r, b = recent.get(value, 0), baseline.get(value, 0)
        if b > 0 and b >= min_baseline and growth_pct(r, b, periods.recent.hours, periods.baseline.hours) > 0:
            rows.append((value, r, b, growth_pct(r, b, periods.recent.hours, periods.baseline.hours)))
    rows.sort(key=lambda row: (-row[3], row[0]))
    return pl.DataFrame(rows[:limit], schema=SCHEMA, orient="row")


@pytest.mark.parametrize(
    ("window", "expected"),
    [("24h", fx.EXPECTED_TRENDING_24H), ("7d", fx.EXPECTED_TRENDING_7D), ("30d", fx.EXPECTED_TRENDING_30D)],
)
def test_keyword_suppressions_match_the_hand_computed_trends(frames, window: str, expected) -> None:
    # Only growing values are trending: the hand-computed rows with growth <= 0 are left out.
    expected_frame = pl.DataFrame([row for row in expected if row[3] > 0], schema=SCHEMA, orient="row")
    assert_frame_equal(run(frames, window=window), expected_frame)
    assert_frame_equal(naive(window, "keyword", "suppressions", 50, 10), expected_frame)


@pytest.mark.parametrize("min_baseline", [0.0, 10.0])
@pytest.mark.parametrize("metric", ["suppressions", "events", "unique_users"])
@pytest.mark.parametrize("dimension", ["keyword", "domain", "platform", "page_context"])
@pytest.mark.parametrize("window", ["24h", "7d", "30d"])
def test_every_window_dimension_and_metric_match_a_naive_computation(
    frames, window: str, dimension: str, metric: str, min_baseline: float
) -> None:
    result = run(frames, window=window, dimension=dimension, metric=metric, min_baseline=min_baseline)
    assert_frame_equal(result, naive(window, dimension, metric, 50, min_baseline))


def test_the_fixture_makes_every_combination_non_trivial(frames) -> None:
    # Guards the parametrised comparison above against comparing empty frames.
    for window in ("24h", "7d", "30d"):
        for dimension in ("keyword", "domain", "platform", "page_context"):
            for metric in ("suppressions", "events", "unique_users"):
                assert run(frames, window, dimension, metric, min_baseline=0).height > 0, (window, dimension, metric)


def test_min_baseline_filters_on_the_baseline(frames) -> None:
    values = lambda frame: frame.get_column("value").to_list()  # noqa: E731
    # tiny: baseline 4, recent 40 -> 2900 %; fresh: baseline 0 -> never (growth undefined)
    assert values(run(frames, min_baseline=0))[:2] == ["tiny", "snakes"]
    assert run(frames, min_baseline=0).row(0) == ("tiny", 40, 4, 2900.0)
    assert "fresh" not in values(run(frames, min_baseline=0))
    assert "tiny" not in values(run(frames, min_baseline=10))
    assert "bitcoin" in values(run(frames, min_baseline=10))       # baseline exactly 10 is kept
    assert "bitcoin" not in values(run(frames, min_baseline=10.5))
    assert values(run(frames, min_baseline=31)) == ["weather"]  # elon musk: baseline 60 but growth 0


def test_growth_ties_are_ordered_by_value(frames) -> None:
    result = run(frames)
    assert result.filter(pl.col("growth_pct") == 50.0).get_column("value").to_list() == ["bitcoin", "crypto"]


def test_limit_keeps_the_fastest_growing(frames) -> None:
    assert run(frames, limit=2).get_column("value").to_list() == ["snakes", "bitcoin"]


def test_growth_is_the_windows_formula_for_every_row(frames) -> None:
    for window in ("24h", "7d", "30d"):
        periods = trending_periods(window, fx.FIXTURE_AS_OF)
        for dimension in ("keyword", "domain"):
            for value, recent, baseline, growth in run(frames, window, dimension, min_baseline=0).rows():
                assert growth == growth_pct(recent, baseline, periods.recent.hours, periods.baseline.hours), value


def test_unique_users_trend_counts_distinct_users_per_period(frames) -> None:
    # snakes: recent users 9, 10, 11, 12; baseline (03-09T20:00..03-10T03:30) user 9 only.
    result = run(frames, metric="unique_users", min_baseline=1)
    snakes = result.filter(pl.col("value") == "snakes").row(0)
    assert snakes == ("snakes", 4, 1, growth_pct(4, 1, 6.0, 18.0))
    assert snakes[3] == 1100.0


@pytest.mark.parametrize("metric", ["suppressions", "events", "unique_users"])
def test_periods_that_do_not_start_on_the_hour_count_exact_events(frames, metric: str) -> None:
    # The engine only receives hour-aligned as_of values, but a rollup must never be used for a
    # period that cuts an hour: the answer would include events outside the period.
    as_of = fx.FIXTURE_AS_OF - dt.timedelta(minutes=20)
    for dimension in ("keyword", "domain"):
        result = run(frames, "24h", dimension, metric, min_baseline=0, as_of=as_of)
        assert_frame_equal(result, naive("24h", dimension, metric, 50, 0, as_of=as_of))


def test_large_suppression_counts_do_not_wrap(frames) -> None:
    big = 2**31 - 1  # the largest value the stored Int32 column holds
    rows = [
        {**fx.suppression_rows()[0], "ts": fx.FIXTURE_AS_OF - dt.timedelta(hours=h), "keyword": "huge", "suppressions": big}
        for h in (1, 2, 20, 21)
    ]
    extra = pl.DataFrame(rows, schema=fx.suppressions_frame().schema)
    huge = build_frames(pl.concat([fx.suppressions_frame(), extra]), fx.keyword_changes_frame(), 1)
    result = run(huge, min_baseline=0).filter(pl.col("value") == "huge")
    assert result.rows() == [("huge", 2 * big, 2 * big, 200.0)]
