"""The vectorised growth formula equals the plain one (`tests/support/growth.py`) (Python floats, Python round)."""

from __future__ import annotations

import random
import struct

import polars as pl
import pytest

from service.api.windows import trending_periods
from service.engine.growth import round_like_python, with_growth_pct
from tests.support import fixture_data as fx
from tests.support.growth import growth_pct

PERIOD_HOURS = [
    (periods.recent.hours, periods.baseline.hours)
    for periods in (trending_periods(window, fx.FIXTURE_AS_OF) for window in ("24h", "7d", "30d"))
]


def _rounded(values: list[float], decimals: int = 2) -> list[float]:
    frame = pl.DataFrame({"x": values}, schema={"x": pl.Float64})
    return frame.select(round_like_python(pl.col("x"), decimals, frame.height)).get_column("x").to_list()


def test_period_lengths_are_the_designed_ones() -> None:
    assert PERIOD_HOURS == [(6.0, 18.0), (24.0, 144.0), (168.0, 552.0)]


def test_rounding_matches_python_where_a_naive_scale_and_round_does_not() -> None:
    # 51.725000000000001 * 100 is exactly 5172.5 in floating point; Python rounds the true value up.
    tricky = [51.725000000000001, -92.725, 2.675, 1.005, 0.125, 0.375, -0.125, 2.5, 0.005, 1e-9, -1e-9, 0.0]
    assert _rounded(tricky) == [round(x, 2) for x in tricky]
    naive = pl.DataFrame({"x": tricky}).select(pl.col("x").round(2)).get_column("x").to_list()
    assert naive != [round(x, 2) for x in tricky]  # the reason round_like_python exists


def test_rounding_matches_python_on_many_values() -> None:
    rng = random.Random(20260310)
    values = [rng.uniform(-1e5, 1e5) for _ in range(50_000)]
    values += [k / 1000 for k in range(-30_000, 30_000)]  # dense near halves
    values += [k / 8 for k in range(-4_000, 4_000)]        # exact binary halves: ties to even
    values += [struct.unpack("d", struct.pack("Q", rng.getrandbits(62)))[0] for _ in range(5_000)]
    values = [v for v in values if abs(v) < 1e12]
    for decimals in (0, 2, 3):
        assert _rounded(values, decimals) == [round(v, decimals) for v in values]


def test_negative_zero_is_rendered_as_zero() -> None:
    assert str(_rounded([-0.001])[0]) == "0.0"


@pytest.mark.parametrize(("recent_hours", "baseline_hours"), PERIOD_HOURS)
def test_growth_equals_the_definition(recent_hours: float, baseline_hours: float) -> None:
    rng = random.Random(int(recent_hours))
    pairs = [(rng.randint(0, 100_000), rng.randint(1, 100_000)) for _ in range(60_000)]
    pairs += [(r, b) for r in range(0, 60) for b in range(1, 60)]
    frame = pl.DataFrame(pairs, schema={"recent": pl.Int64, "baseline": pl.Int64}, orient="row")
    result = with_growth_pct(frame, "recent", "baseline", recent_hours, baseline_hours).get_column("growth_pct")
    assert result.dtype == pl.Float64
    assert result.to_list() == [growth_pct(r, b, recent_hours, baseline_hours) for r, b in pairs]


def test_empty_frame() -> None:
    frame = pl.DataFrame(schema={"recent": pl.Int64, "baseline": pl.Int64})
    assert with_growth_pct(frame, "recent", "baseline", 6.0, 18.0).schema["growth_pct"] == pl.Float64
