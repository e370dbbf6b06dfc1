"""Trending growth, vectorised, equal bit for bit to its definition: 100 * (recent/R - baseline/B) /
(baseline/B) in Python float arithmetic, then Python's `round(x, 2)` (the tests keep it written
plainly in tests/support/growth.py and compare).
Two polars shortcuts differ from it in the last bit, which `round` can turn into a visible
0.01: polars divides by a scalar by multiplying with its reciprocal (not the correctly rounded
quotient), and its `round` scales by 100 in floating point, landing on the wrong side of a half
for values such as 51.725000000000001. Here every division is by a materialised column (exact
IEEE division) and the rounding recovers the exact error of the scaling, so each published
growth equals what the definition gives for the same published recent and baseline.
"""

from __future__ import annotations

import math

import polars as pl

# 2**27 + 1: Veltkamp's constant, splits a double into two halves of at most 26 bits each.
_SPLIT = 134217729.0


def _constant(value: float, height: int) -> pl.Series:
    # A materialised column, not a literal: see the module docstring.
    return pl.repeat(float(value), height, dtype=pl.Float64, eager=True)


def round_like_python(value: pl.Expr, decimals: int, height: int) -> pl.Expr:
    """Python's `round(x, decimals)` for a Float64 column of `height` rows.

    Python rounds the exact binary value of x, half to even. Here x*scale is computed in floating
    point and its exact rounding error recovered with Dekker's product (scale = 10**decimals fits
    in 26 bits, so the split products are exact); the error decides only when the computed
    product sits exactly on a half. k / scale, correctly rounded, is the double nearest to the
    decimal k/10**decimals, which is what Python returns. The work is done on |x| so that the
    fractional part is exact, and the sign is restored at the end.
    """
    if not 0 <= decimals <= 7:
        raise ValueError("decimals must be between 0 and 7")
    scale = float(10**decimals)
    magnitude = value.abs()
    scaled = magnitude * scale
    c = magnitude * _SPLIT
    high = c - (c - magnitude)
    low = magnitude - high
    err = (high * scale - scaled) + low * scale
    whole = scaled.floor()
    fraction = scaled - whole
    rounded = (
        pl.when(fraction > 0.5).then(whole + 1.0)
        .when(fraction < 0.5).then(whole)
        .when(err > 0.0).then(whole + 1.0)
        .when(err < 0.0).then(whole)
        .otherwise(whole + whole % 2.0)  # exactly a half: to even
    )
    # `+ 0.0` turns -0.0 into 0.0: equal values, but "-0.0" would be rendered.
    return value.sign() * rounded / _constant(scale, height) + 0.0


def with_growth_pct(
    frame: pl.DataFrame,
    recent: str,
    baseline: str,
    recent_hours: float,
    baseline_hours: float,
    name: str = "growth_pct",
) -> pl.DataFrame:
    """Add `name` = 100 * (recent/R - baseline/B) / (baseline/B), rounded to 2 decimals.

    Every baseline must be > 0 (callers drop the others: growth is undefined there). The
    operations are those of the definition (module docstring), in the same order.
    """
    height = frame.height
    base_rate = pl.col(baseline).cast(pl.Float64) / _constant(baseline_hours, height)
    recent_rate = pl.col(recent).cast(pl.Float64) / _constant(recent_hours, height)
    raw = 100.0 * (recent_rate - base_rate) / base_rate
    return frame.with_columns(round_like_python(raw, 2, height).alias(name))


# One-sided error probability of each part of the bound. Trending compares hundreds of values at
# once, so a bound that one flat value in 20 would clear by chance (95 %) ranks noise first;
# at 1 in 1,000 a flat value rarely clears it, while real rises (many times their noise) do.
CONFIDENCE_P = 0.001
# Privacy noise is discrete Laplace: P(noise > t) = exp(-t / b) / 2 with b = sd / sqrt 2, so the
# bound is b ln(1 / 2p) = 4.39 sd. Natural variation of a count: about normal, 3.09 sd at 0.1 %.
CONFIDENCE_Z = math.log(1 / (2 * CONFIDENCE_P)) / math.sqrt(2)
COUNT_Z = 3.09


def noise_margin(count: pl.Expr, std: pl.Expr, z: float = CONFIDENCE_Z) -> pl.Expr:
    """How far a shown count may be from its expected value by privacy noise (z x its noise sd)
    and ordinary chance (3.09 sqrt(count), a Poisson count), each exceeded with probability 1/1000
    at the default z. `count` is the count whose chance variation it is (at least 1)."""
    return z * std + COUNT_Z * count.cast(pl.Float64).clip(lower_bound=1.0).sqrt()


def beyond_noise(current: pl.Expr, previous: pl.Expr, *, current_chance: pl.Expr, previous_chance: pl.Expr,
                 current_std: pl.Expr, previous_std: pl.Expr, z: float = CONFIDENCE_Z) -> pl.Expr:
    """The change from `previous` to `current` (two periods of the same length) is larger than the
    privacy noise and chance of both can explain:

        |current - previous| > sqrt((z sd_current)^2 + (z sd_previous)^2
                                    + 3.09^2 (chance_current + chance_previous))

    with each number's noise sd and the count whose chance (Poisson) variation it has (at least 1
    each). The four parts are independent, so their margins add in quadrature, not end to end as in
    `noise_margin`: four bounds each exceeded with probability 1/1000 are exceeded together far
    more rarely than that, and the end-to-end sum hid changes many times their noise (+16 % on a
    region's 15,000 weekly suppressions). For two Laplace draws of the same sd the exact 1/1000
    tail of their difference is 5.5 sd, below the quadrature's 4.39 sqrt 2 = 6.2 sd, so the test
    stays on the safe side; tests/engine/test_engine_compare_intervals.py measures by simulation how often
    flat values are flagged."""
    def chance(count: pl.Expr) -> pl.Expr:
        return count.cast(pl.Float64).clip(lower_bound=1.0)

    variance = (z * z * (current_std.pow(2) + previous_std.pow(2))
                + COUNT_Z * COUNT_Z * (chance(current_chance) + chance(previous_chance)))
    return (current.cast(pl.Float64) - previous.cast(pl.Float64)).abs() > variance.sqrt()


def with_growth_lower_bound(
    frame: pl.DataFrame,
    recent: str,
    baseline: str,
    recent_hours: float,
    baseline_hours: float,
    name: str = "growth_lower_bound",
    z: float = CONFIDENCE_Z,
) -> pl.DataFrame:
    """Add `name`: the growth that the noise and chance cannot explain (a lower confidence bound).

    Each shown count v carries privacy noise of known standard deviation sd (`<column>_std`, from
    the privacy stage) and natural variation of about sqrt(v) (a Poisson count). Its margin is
    z sd + 3.09 sqrt(v), z = 4.39 (each part exceeded with probability 1/1000). The bound takes the
    recent count lower and the baseline higher by their margins:
    100 x ((recent - margin_r)+ / R - (baseline + margin_b) / B) / ((baseline + margin_b) / B).
    A value whose bound is <= 0 could be flat or shrinking for all the numbers tell. z = 0: the
    plain growth of the shown numbers (no margins).
    """
    if z == 0:
        return with_growth_pct(frame, recent, baseline, recent_hours, baseline_hours, name)

    def margin(column: str) -> pl.Expr:
        return noise_margin(pl.col(column), pl.col(f"{column}_std"), z)

    recent_low = (pl.col(recent).cast(pl.Float64) - margin(recent)).clip(lower_bound=0.0) / recent_hours
    baseline_high = (pl.col(baseline).cast(pl.Float64) + margin(baseline)) / baseline_hours
    return frame.with_columns((100.0 * (recent_low - baseline_high) / baseline_high).alias(name))
