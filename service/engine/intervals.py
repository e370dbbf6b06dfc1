"""`intervals=true`: each published count with an interval that holds its exact value
(without noise and without the per-user cap) about 90 % of the time.

Two things separate a published count v from the exact one:

- **the privacy noise**: two-sided geometric with parameter alpha, known for each cell (the
  privacy stage reports its standard deviation sd = sqrt(2 alpha) / (1 - alpha), from which alpha
  follows). P(|noise| >= m) = 2 alpha^m / (1 + alpha), so the noise stays within the smallest
  whole k with P(|noise| > k) <= 10 %: 2 for user counts (92.7 %), about 1.63 sd for large sd;
- **the cap** (sums: suppressions, events, adds, removes, edits): each user's total in a cell is
  cut at the cell's cap C, which can only lower a sum. How much it cut shows in q = (v / users) / C,
  the mean per user against the cap: near 0 the cap cut (almost) nobody, near 1 most users sit at
  the cap and the exact sum may be several times v (users: the lower end of the cell's user count,
  below). The upper bound adds 4 v q^2; or, when the cap is the one the cell's user count alone
  allows (`ceiling_bound`: the cap's ceiling, not its pilot-based rule, set it, privacy/caps.py),
  12 v q^3: such a cell's users may bring far more than the cap (a few heavy users look like a
  few light ones to the pilot), and a q near 1 says they did. Both forms and factors are
  calibrated on the accuracy benchmark's data (bench/bench_accuracy.py) so that about 90 % of the
  sums hold their exact value, and at least 85 % in every endpoint's cells of every size
  (docs/privacy.md).
- **selection near k**: a cell is shown when its noisy user count is at least k_min, so a count
  shown just above k_min may be there because its noise lifted it: the lower end of a user count
  v reaches down NEAR_K - (v - k_min) further while that is positive.

So [max(0, v - k), v + k + 4 v q^2] (sums), whole numbers. A count shown as 0 may be a cell that
was suppressed (fewer than k_min users, whatever its exact value): its interval reaches up to what
k_min users could bring (k_min - 1 + k users; for a sum, that many users at the cap). A derived count
(total_events, net_adds) gets the interval of its formula over its parts' intervals.
"""

from __future__ import annotations

import math

import polars as pl

from service.engine.noise_std import LOWERED, STD
from service.engine.shapes import RecordShape
from service.privacy import PrivacyParams

INTERVALS = "intervals"
COVERAGE = 0.90
CAP_BIAS = 4.0  # the upper bound of a capped sum: v + k + CAP_BIAS x v x q^2 (calibrated, see above)
CEILING_BIAS = 12.0  # ... or v + k + CEILING_BIAS x v x q^3 when its cap is the ceiling's (calibrated)
NEAR_K = 4  # a user count shown at k_min + j reaches NEAR_K - j further down (selection near k_min)


def _alpha(sd: pl.Expr) -> pl.Expr:
    """The geometric parameter of a two-sided geometric noise with standard deviation `sd`: the
    root in (0, 1) of sd^2 (1 - alpha)^2 = 2 alpha."""
    variance = sd.cast(pl.Float64) ** 2
    return pl.when(variance > 0).then((variance + 1 - (2 * variance + 1).sqrt()) / variance).otherwise(0.0)


def noise_bound(sd: pl.Expr, coverage: float = COVERAGE) -> pl.Expr:
    """The smallest whole k with P(|noise| > k) <= 1 - coverage (0 without noise)."""
    alpha = _alpha(sd)
    tail = (1 - coverage) / 2
    k = ((tail * (1 + alpha)).log() / alpha.log()).ceil() - 1
    return pl.when(alpha > 0).then(k.clip(lower_bound=0)).otherwise(0.0)


def _cap(sd: pl.Expr, epsilon: float) -> pl.Expr:
    """A summed measure's cap, from its noise: alpha = exp(-epsilon / cap); null without noise
    (then nothing is capped either)."""
    alpha = _alpha(sd)
    return pl.when(alpha > 0).then(-epsilon / alpha.log()).otherwise(None)


def ceiling_bound(cap: pl.Expr, users: pl.Expr, params: PrivacyParams) -> pl.Expr:
    """Whether a cell's cap may be its ceiling's share of its user count (privacy/caps.py,
    `choose_caps`) rather than its pilot-based rule: below the smallest cap that rule gives, or
    equal (within rounding) to cap_fit x users, at least cap_floor. Computed from published numbers."""
    ceiling = pl.max_horizontal(pl.lit(float(params.cap_floor)), params.cap_fit * users).ceil()
    return (cap < math.ceil(params.cap_multiplier) - 0.5) | ((cap - ceiling).abs() < 0.75)


def with_intervals(records: pl.DataFrame, shape: RecordShape, params: PrivacyParams) -> pl.DataFrame:
    """`records` (with each count's `<count>_std`) with `intervals`: per count, [low, high]."""
    users = pl.col(shape.users).cast(pl.Float64)
    users_k = noise_bound(pl.col(shape.users + STD))
    # Selection near k_min: a user count shown just above it may be there because its noise lifted it.
    selected = pl.when(users_k > 0).then((NEAR_K - (users - params.min_users)).clip(lower_bound=0.0)).otherwise(0.0)
    fewest_users = (users - users_k - selected).clip(lower_bound=1.0)
    hidden_users = params.min_users - 1 + users_k  # what a suppressed cell may hold, at most (about)
    bounds: dict[str, tuple[pl.Expr, pl.Expr]] = {}
    for m in shape.measures:
        if m in shape.derived:
            continue
        value = pl.col(m).cast(pl.Float64)
        k = noise_bound(pl.col(m + STD))
        low, high = (value - k).clip(lower_bound=0.0), value + k
        if m in shape.capped:
            epsilon = params.epsilon(shape.capped[m]) * (1 - params.pilot_share)
            cap = _cap(pl.col(m + STD), epsilon)
            q = (value / fewest_users / cap).clip(upper_bound=1.0)
            bias = pl.when(ceiling_bound(cap, users, params)).then(CEILING_BIAS * value * q**3).otherwise(CAP_BIAS * value * q**2)
            high = high + bias.fill_null(0.0)
            hidden = (hidden_users * cap).fill_null(0.0)
        elif m == shape.users:
            hidden = hidden_users
            low = pl.when(value > 0).then((low - selected).clip(lower_bound=0.0)).otherwise(low)
            if m + LOWERED in records.columns:  # lowered to a count beside it (publication/reconcile.py):
                high = high + pl.col(m + LOWERED).fill_null(0.0)  # the exact count may be as far above
        else:
            hidden = k
        high = pl.when(value == 0).then(pl.max_horizontal(high, hidden)).otherwise(high)
        bounds[m] = (low.floor().cast(pl.Int64), high.ceil().cast(pl.Int64))
    for m, parts in shape.derived.items():
        low = pl.sum_horizontal(bounds[p][0] if sign > 0 else -bounds[p][1] for p, sign in parts)
        high = pl.sum_horizontal(bounds[p][1] if sign > 0 else -bounds[p][0] for p, sign in parts)
        bounds[m] = (low, high)
    return records.with_columns(pl.struct(
        pl.concat_list(bounds[m][0], bounds[m][1]).alias(m) for m in shape.measures
    ).alias(INTERVALS))
