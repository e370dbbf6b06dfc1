"""GET /keyword-activity in the engine: counts per action, types, order, invariants."""

from __future__ import annotations

from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.api.windows import window_range
from service.engine.requests import KeywordActivity
from service.privacy import Privacy
from tests.support import fixture_data as fx
from tests.support.engines import Engine

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

COLUMNS = ("keyword", "adds", "removes", "edits", "total_events", "unique_users", "net_adds")
SCHEMA = {column: (pl.String if column == "keyword" else pl.Int64) for column in COLUMNS}
ORDER_INDEX = {"added": 1, "removed": 2, "edited": 3, "all": 4}  # column that orders each type


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


def run(frames, window="24h", type="all", limit=50) -> pl.DataFrame:
    return Engine(Privacy.exact()).keyword_activity(frames, fx.FIXTURE_AS_OF, KeywordActivity(window, type, limit))


def naive(window: str, type: str, limit: int) -> pl.DataFrame:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    users: dict[str, set[int]] = defaultdict(set)
    for row in fx.rows_in(fx.keyword_change_rows(), window_range(window, fx.FIXTURE_AS_OF)):
        counts[row["keyword"]][row["action"]] += 1
        counts[row["keyword"]]["rows"] += 1
        users[row["keyword"]].add(row["user_id"])
    rows = [
        (k, c["add"], c["remove"], c["edit"], c["rows"], len(users[k]), c["add"] - c["remove"])
        for k, c in counts.items()
    ]
    index = ORDER_INDEX[type]
    if type != "all":
        rows = [row for row in rows if row[index] > 0]
    rows.sort(key=lambda row: (-row[index], row[0]))
    return pl.DataFrame(rows[:limit], schema=SCHEMA, orient="row")


def test_all_24h_matches_the_hand_computed_activity(frames) -> None:
    expected = pl.DataFrame(fx.EXPECTED_KEYWORD_ACTIVITY_24H, schema=SCHEMA, orient="row")
    assert_frame_equal(run(frames), expected)
    assert_frame_equal(naive("24h", "all", 50), expected)


@pytest.mark.parametrize(
    ("type", "keywords"),
    [
        ("added", ["weather", "elon musk", "snakes", "ai art", "spoilers"]),  # ai art / spoilers tie at 6
        ("removed", ["weather", "spoilers", "crypto", "elon musk"]),
        ("edited", ["weather", "snakes", "elon musk", "crypto"]),
        ("all", ["weather", "elon musk", "spoilers", "snakes", "ai art", "crypto"]),  # ai art / crypto tie at 6
    ],
)
def test_each_type_selects_and_orders_by_its_count(frames, type: str, keywords: list[str]) -> None:
    assert run(frames, type=type).get_column("keyword").to_list() == keywords


@pytest.mark.parametrize("window", ["1h", "6h", "12h", "24h", "7d", "30d"])
@pytest.mark.parametrize("type", ["added", "removed", "edited", "all"])
def test_every_window_and_type_match_a_naive_count(frames, window: str, type: str) -> None:
    assert_frame_equal(run(frames, window, type), naive(window, type, 50))


def test_limit(frames) -> None:
    assert_frame_equal(run(frames, "7d", "removed", limit=2), naive("7d", "removed", 2))
    assert run(frames, "7d", "removed", limit=2).height == 2


def test_invariants_hold_in_every_answer(frames) -> None:
    for window in ("24h", "7d", "30d"):
        result = run(frames, window)
        assert (result["total_events"] == result["adds"] + result["removes"] + result["edits"]).all()
        assert (result["net_adds"] == result["adds"] - result["removes"]).all()


def test_changes_outside_the_window_do_not_count(frames) -> None:
    # elon musk adds at 03-09T11:59:59 (before), 03-10T12:00 (as_of) and 12:20 (after) are excluded
    elon = run(frames).filter(pl.col("keyword") == "elon musk").row(0)
    assert elon == ("elon musk", 10, 4, 2, 16, 5, 6)
