"""Trending ranks by growth that the noise cannot explain: the lower confidence bound of growth."""

from __future__ import annotations

import datetime as dt
import math
import random

import polars as pl
import pytest

from service.engine.growth import CONFIDENCE_Z, COUNT_Z, with_growth_lower_bound
from service.engine.requests import Trending
from service.privacy import Privacy
from service.store.reader import build_frames
from tests.support import fixture_data as fx
from tests.support.engines import Engine

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

AS_OF = fx.FIXTURE_AS_OF


def test_the_lower_bound_is_the_documented_formula():
    frame = pl.DataFrame({"recent": [6000, 40], "baseline": [9000, 12], "recent_std": [30.0, 20.0],
                          "baseline_std": [40.0, 20.0]})
    bound = with_growth_lower_bound(frame, "recent", "baseline", 6.0, 18.0)["growth_lower_bound"].to_list()
    z = CONFIDENCE_Z
    assert z == pytest.approx(4.394, abs=1e-3)  # Laplace noise above z sd: probability 1/1000
    for (r, b, sr, sb), got in zip(frame.rows(), bound, strict=True):
        low = max(r - z * sr - COUNT_Z * math.sqrt(r), 0) / 6
        high = (b + z * sb + COUNT_Z * math.sqrt(b)) / 18
        assert got == pytest.approx(100 * (low - high) / high)
    # 6000 vs 9000: twice the hourly rate, clearly; 40 vs 12 with noise of 20: could be nothing.
    assert bound[0] > 50 and bound[1] < 0


def noisy_day(quiet: int, seed: int = 3) -> pl.DataFrame:
    """`quiet` keywords with the same small rate all day (no growth at all), and `surge` with a
    real threefold rise in the last 6 hours; one row per event, every event from its own user."""
    rng = random.Random(seed)
    template = fx.suppression_rows()[0]
    keywords, times = [], []

    def events(keyword: str, per_hour: float, start_hours: float, end_hours: float) -> None:
        for _ in range(round(per_hour * (end_hours - start_hours))):
            keywords.append(keyword)
            times.append(AS_OF - dt.timedelta(hours=rng.uniform(start_hours, end_hours)))

    for i in range(quiet):
        events(f"quiet {i}", rng.uniform(0.8, 2.0), 0, 24)
    events("surge", 10.0, 6, 24)
    events("surge", 30.0, 0, 6)
    frame = pl.DataFrame({"ts": times, "keyword": keywords}).with_row_index("user_id")
    schema = fx.suppressions_frame().schema
    return frame.with_columns(
        pl.lit(2).alias("suppressions"),
        *(pl.lit(template[name]).alias(name) for name in schema if name not in ("ts", "keyword", "user_id", "suppressions")),
    ).select(pl.col(name).cast(dtype) for name, dtype in schema.items()).sort("ts")


@pytest.fixture(scope="module")
def frames():
    return build_frames(noisy_day(300), fx.keyword_changes_frame(), 1)


def test_a_real_rise_beats_noise_with_the_default_parameters(frames):
    request = Trending("24h", "keyword", "suppressions", 50, 10)
    ranked = Engine(Privacy("trend-secret")).trending(frames, AS_OF, request)
    assert ranked["value"][0] == "surge"
    # Only growth the noise cannot explain is listed: of 300 flat values, few if any.
    assert ranked.height <= 5
    # Ranked by the plain growth of the noisy numbers, flat values would come first: the fixture
    # is one where the bound matters.
    plain = Engine(Privacy("trend-secret"), trending_confidence=0).trending(frames, AS_OF, request)
    assert plain["value"].to_list().index("surge") > 0
    assert plain.height > 20


def test_growth_pct_stays_the_plain_growth_of_the_shown_numbers(frames):
    ranked = Engine(Privacy("trend-secret")).trending(frames, AS_OF, Trending("24h", "keyword", "suppressions", 50, 10))
    for _value, recent, baseline, growth in ranked.rows():
        assert growth == round(100 * (recent / 6 - baseline / 18) / (baseline / 18), 2)
