"""GET /top-keywords in the engine: ranking by suppressions, ties, rank, limit, windows."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.api.windows import window_range
from service.engine.requests import TopKeywords
from service.privacy import Privacy
from service.store.reader import build_frames
from tests.support import fixture_data as fx
from tests.support.engines import Engine

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

SCHEMA = {"keyword_raw": pl.String, "suppressions": pl.Int64, "users_est": pl.Int64, "rank": pl.Int64}


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


def run(frames, window: str, limit: int = 50) -> pl.DataFrame:
    return Engine(Privacy.exact()).top_keywords(frames, fx.FIXTURE_AS_OF, TopKeywords(window=window, limit=limit))


def naive(window: str, limit: int) -> pl.DataFrame:
    suppressions: dict[str, int] = defaultdict(int)
    users: dict[str, set[int]] = defaultdict(set)
    for row in fx.rows_in(fx.suppression_rows(), window_range(window, fx.FIXTURE_AS_OF)):
        suppressions[row["keyword"]] += row["suppressions"]
        users[row["keyword"]].add(row["user_id"])
    ranked = sorted(suppressions, key=lambda keyword: (-suppressions[keyword], keyword))[:limit]
    return pl.DataFrame(
        {
            "keyword_raw": ranked,
            "suppressions": [suppressions[k] for k in ranked],
            "users_est": [len(users[k]) for k in ranked],
            "rank": list(range(1, len(ranked) + 1)),
        },
        schema=SCHEMA,
    )


def test_24h_matches_the_hand_computed_ranking(frames) -> None:
    expected = pl.DataFrame(
        [(*row, rank) for rank, row in enumerate(fx.EXPECTED_TOP_KEYWORDS_24H, start=1)],
        schema=SCHEMA,
        orient="row",
    )
    assert_frame_equal(run(frames, "24h"), expected)
    assert_frame_equal(naive("24h", 50), expected)


def test_ties_rank_by_keyword_ascending(frames) -> None:
    result = run(frames, "24h")
    tied = result.filter(pl.col("suppressions") == 30)
    assert tied.get_column("keyword_raw").to_list() == ["ai art", "crypto"]
    assert tied.get_column("rank").to_list() == [6, 7]


@pytest.mark.parametrize("window", ["1h", "6h", "12h", "24h", "7d", "30d"])
def test_every_window_matches_a_naive_count(frames, window: str) -> None:
    assert_frame_equal(run(frames, window), naive(window, 50))


def test_limit_keeps_the_top_ranks(frames) -> None:
    result = run(frames, "7d", limit=3)
    assert_frame_equal(result, naive("7d", 3))
    assert result.get_column("rank").to_list() == [1, 2, 3]
    # crypto and spoilers tie at 78 for third place: crypto sorts first
    assert result.get_column("keyword_raw").to_list() == ["elon musk", "snakes", "crypto"]


def test_1h_window_holds_only_the_last_hour(frames) -> None:
    # [11:00, 12:00): fresh at 11:00, 11:30 and 11:59:59.999999 (3 x 1), snakes at 11:00 (3),
    # crypto at 11:00 (2), weather at 11:00 and 11:30 (users 1 and 2); the elon musk events at
    # 12:00 and 12:10 are not in the window.
    assert run(frames, "1h").rows() == [
        ("fresh", 3, 1, 1),
        ("snakes", 3, 1, 2),
        ("crypto", 2, 1, 3),
        ("weather", 2, 2, 4),
    ]


def test_empty_window_gives_an_empty_frame_with_the_columns(frames) -> None:
    empty = fx.fixture_frames().suppressions.clear()
    frames = type(frames)(empty, frames.keyword_changes, frames.generation, frames.last_event)
    assert_frame_equal(run(frames, "24h"), pl.DataFrame(schema=SCHEMA))


def test_suppression_sums_do_not_wrap_at_int32(frames) -> None:
    big = 2**31 - 1  # the largest value the stored Int32 column holds
    row = {**fx.suppression_rows()[0], "ts": fx.FIXTURE_AS_OF - dt.timedelta(hours=1), "keyword": "huge", "suppressions": big}
    extra = pl.DataFrame([row, row, row], schema=fx.suppressions_frame().schema)
    huge = build_frames(pl.concat([fx.suppressions_frame(), extra]), fx.keyword_changes_frame(), 1)
    assert run(huge, "24h", limit=1).row(0) == ("huge", 3 * big, 1, 1)
