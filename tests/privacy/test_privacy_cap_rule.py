"""The parts of the guarantee of the per-cell cap rule (docs/privacy.md, "What this guarantees"):
each release's sensitivity, the cap as a function of the noisy releases only, its ceiling (a small
cell's noise fits the cell whatever its pilot drew), and the same noise for the same cell."""

from __future__ import annotations

import math
import random

import polars as pl
import pytest

from service.privacy import Contributions, Privacy, PrivacyParams
from service.privacy.caps import choose_caps
from service.privacy.params import geometric_std
from tests.support.privacy_stage import context, publish

SECRET = "cap-rule-test-secret"
PARAMS = PrivacyParams()
PILOT_ALPHA = math.exp(-PARAMS.epsilon("suppressions") * PARAMS.pilot_share / PARAMS.pilot_cap)
PILOT_SD = geometric_std(PILOT_ALPHA)


def caps(users: list[float], pilots: list[float], params: PrivacyParams = PARAMS) -> list[int]:
    """The caps `choose_caps` gives cells of these noisy user counts and noisy pilot sums."""
    def noisy_pilot(alpha: float) -> pl.Series:
        assert alpha == pytest.approx(PILOT_ALPHA)  # the pilot's noise is drawn at the pilot's own rate
        return pl.Series(pilots, dtype=pl.Int64)

    return choose_caps(params, "suppressions", pl.Series(users, dtype=pl.Int64), noisy_pilot).to_list()


def test_a_cap_stays_within_the_floor_and_max_cap_whatever_the_draws():
    rng = random.Random(3)
    users = [rng.choice([0, 1, 9, 10, 25, 400, 10**5, 10**7]) + rng.randint(-3, 3) for _ in range(2_000)]
    pilots = [rng.choice([-10**6, -500, 0, 300, 5_000, 10**9]) + rng.randint(-500, 500) for _ in range(2_000)]
    result = caps(users, pilots)
    assert min(result) >= PARAMS.smallest_cap() == PARAMS.cap_floor
    assert max(result) <= PARAMS.max_cap


@pytest.mark.parametrize("users", [10, 20, 40])
def test_a_small_cells_cap_is_a_share_of_its_users_however_high_its_pilot_drew(users: int):
    """The pilot sum's noise (s.d. about 226) is far larger than a cell of a few dozen light users:
    a draw a few s.d. high used to give such a cell a cap in the hundreds, and noise to match.
    Now, up to nearly pilot_low s.d. above the cell's own pilot, its cap stays at most cap_fit x its
    user count (its noise's scale about a third of the cell's sum); the old rule's cap is shown
    for comparison."""
    pilots = [users * 2 + round(sds * PILOT_SD) for sds in (-3, 0, 1, 2, 3, 3.5)]
    result = caps([users] * len(pilots), pilots)
    assert max(result) <= max(PARAMS.cap_floor, math.ceil(PARAMS.cap_fit * users)) <= 10
    old = [min(max((p - PILOT_SD) / users, 1), PARAMS.pilot_cap) * PARAMS.cap_multiplier for p in pilots]
    assert max(old) > 10 * max(result)


def test_the_cap_never_exceeds_its_ceiling_so_the_noise_fits_the_cells_sum_read_low():
    """cap <= cap_fit x max(n^, pilot^ - pilot_low x sd) (rounded up, at least the floor): the
    sum's noise scale, cap / epsilon, is a fixed share of what the cell's sum is known to be at
    least (each user brings at least 1; the pilot is at most the sum)."""
    rng = random.Random(8)
    users = [rng.randint(10, 5_000) for _ in range(3_000)]
    pilots = [rng.randint(-1_000, 200_000) for _ in range(3_000)]
    for n, pilot, cap in zip(users, pilots, caps(users, pilots), strict=True):
        low = max(n, pilot - PARAMS.pilot_low * PILOT_SD)
        assert cap <= max(PARAMS.cap_floor, math.ceil(PARAMS.cap_fit * low))


def test_large_cells_keep_their_pilot_rule():
    """The ceiling does not bind where the pilot is measured well: a cell of 100,000 users whose
    pilot reads 16 a user gets multiplier x 16 x growth, as before."""
    users, pilot = 100_000, 1_600_000
    mean = (pilot - PARAMS.pilot_shrink * PILOT_SD) / users
    growth = 1 + PARAMS.cap_growth * math.log10(users / 100)
    assert caps([users], [pilot]) == [math.ceil(PARAMS.cap_multiplier * mean * growth)]


@pytest.mark.parametrize("cap", [PARAMS.smallest_cap(), 5, 37, 400])
def test_one_user_moves_a_capped_sum_by_at_most_the_cap_and_the_pilot_by_at_most_pilot_cap(cap: int):
    """The sensitivity of each release: adding one user (of any total) to a cell changes its capped
    sum by at most the cap, and its pilot sum (each user's total capped at pilot_cap) by at most
    pilot_cap. Whichever way `Contributions` computes it (with or without the cells' exact totals)."""
    rng = random.Random(cap)
    totals = [rng.choice([1, 1, 2, 3, 8, 40, 900]) for _ in range(60)]
    keys = pl.DataFrame({"keyword": ["k"], "suppressions_cap": [cap]})

    def capped(values: list[int], with_totals: bool) -> int:
        per_user = pl.DataFrame({"keyword": ["k"] * len(values), "suppressions": values})
        exact = pl.DataFrame({"keyword": ["k"], "suppressions": [sum(values)]}) if with_totals else None
        kept = per_user.filter(pl.col("suppressions") > PARAMS.smallest_cap()) if with_totals else per_user
        return Contributions(kept, ("keyword",), exact).capped_sums(keys, ["suppressions"])["suppressions"][0]

    for heavy in (1, cap, cap + 1, 10**6):
        for with_totals in (False, True):
            moved = capped([*totals, heavy], with_totals) - capped(totals, with_totals)
            assert 0 < moved <= cap
        pilot = lambda values: sum(min(v, PARAMS.pilot_cap) for v in values)  # noqa: E731  (engine/measures.py's pilot)
        assert pilot([*totals, heavy]) - pilot(totals) <= PARAMS.pilot_cap


def test_the_cap_reads_only_the_noisy_user_count_and_the_noisy_pilot():
    """Two cells with the same pilot and user count but different sums get the same cap (the
    same noise s.d.): the cap is post-processing of those two releases, not of the sum."""
    frame = pl.DataFrame({"keyword": ["a"], "suppressions": [60], "events": [30], "unique_users": [30]})
    heavier = frame.with_columns(pl.lit(3_000).alias("suppressions"))  # 100 a user: the same pilot (32 a user)...
    lighter = frame.with_columns(pl.lit(960).alias("suppressions"))    # ... as 32 a user
    one, other = (publish(Privacy(SECRET), f, context(), noise_std=True) for f in (heavier, lighter))
    assert one["suppressions_std"][0] == other["suppressions_std"][0]


def test_the_same_cell_gets_the_same_cap_and_number_whatever_else_is_asked_with_it():
    """Consistent noise: the cell's cap and noise come from its own description under the key, so
    it is published the same alone, among other cells, in another row order, and asked again."""
    frame = pl.DataFrame({"keyword": ["small", "mid", "large"], "suppressions": [45, 2_400, 400_000],
                          "events": [20, 1_000, 40_000], "unique_users": [15, 300, 4_000]})
    privacy = Privacy(SECRET)
    together = publish(privacy, frame, context(), noise_std=True).sort("keyword")
    reversed_order = publish(privacy, frame.reverse(), context(), noise_std=True).sort("keyword")
    alone = pl.concat([publish(Privacy(SECRET), frame.slice(i, 1), context(), noise_std=True) for i in range(3)])
    assert together.equals(reversed_order)
    assert together.equals(alone.sort("keyword"))
    assert not together.equals(publish(Privacy("another secret"), frame, context(), noise_std=True).sort("keyword"))
