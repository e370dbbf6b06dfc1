"""A cell's family (docs/privacy.md, "How it works", point 2): the places of one geographic level
over more than a week share their mean per user, so a place of a few dozen heavy users is not capped
as light. The parts of its guarantee: which cells have a family (read from the cell's description
only, so the same cell has the same family, cap and noise in every answer), the family's own
releases (their budget, their noise from the family's description), how the cap reads them, and
that a frame that does not hold its whole family cannot be published without it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import random

import polars as pl
import pytest

from service.api.windows import TimeRange
from service.privacy import PILOT, CellContext, Contributions, Privacy, PrivacyParams, Published
from service.privacy.caps import choose_caps, family_mean
from service.privacy.cells import (
    FAMILY_MIN_SPAN,
    cell_messages,
    family_dimension,
    family_in_frame,
    family_message,
)
from service.privacy.params import geometric_std

SECRET = "family-test-secret"
PARAMS = PrivacyParams()
# A cell in a family: its cap may be this much larger for the same noise (its sum has more epsilon).
SCALE = PARAMS.summed_epsilon("suppressions", in_family=True) / PARAMS.summed_epsilon("suppressions")
AS_OF = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
MONTH = TimeRange(AS_OF - dt.timedelta(days=30), AS_OF)
WEEK = TimeRange(AS_OF - FAMILY_MIN_SPAN, AS_OF)
SUPPRESSIONS = Published("suppressions", "suppressions", "unique_users")


@pytest.mark.parametrize(("dims", "fixed", "span", "expected"), [
    (("city",), {}, MONTH, "city"),                                   # geo-heat, /query by city
    (("country",), {"platform": ("chrome", "firefox")}, MONTH, "country"),  # other filters of several values
    ((), {"county": ("06037",)}, MONTH, "county"),                    # one place, as a filter
    (("city",), {"city": ("a", "b")}, MONTH, "city"),                 # a few places, grouped
    (("city",), {}, WEEK, None),                                      # a week or less: no family
    (("city",), {}, TimeRange(AS_OF - dt.timedelta(days=7, hours=1), AS_OF), "city"),
    (("city", "ts"), {}, MONTH, None),                                # time buckets
    (("keyword",), {}, MONTH, None),                                  # not a place
    (("city", "platform"), {}, MONTH, None),                          # two single values
    (("city",), {"platform": ("chrome",)}, MONTH, None),              # ... one of them a filter
    (("country", "city"), {}, MONTH, None),
    ((), {"city": ("a", "b")}, MONTH, None),                          # a set of places is no place
    ((), {}, MONTH, None),                                            # totals
])
def test_which_cells_have_a_family(dims, fixed, span, expected):
    assert family_dimension(dims, fixed, span) == expected


def test_an_extra_constraint_is_a_single_value_too():
    assert family_dimension(("city",), {}, MONTH, extra=(("action", "add"),)) is None


def test_a_frame_holds_its_family_when_grouped_by_its_dimension_and_not_filtered_on_it():
    assert family_in_frame(("city",), {}, "city")
    assert family_in_frame(("city",), {"platform": ("a", "b")}, "city")
    assert not family_in_frame(("city",), {"city": ("a", "b")}, "city")
    assert not family_in_frame((), {"city": ("a",)}, "city")


def context(dims=("city",), fixed=None, time_range=MONTH, **overrides) -> CellContext:
    return CellContext(table="suppressions", dims=dims, published=(SUPPRESSIONS,), time_range=time_range,
                       fixed=fixed or {}, **overrides)


def test_a_family_is_described_alike_whichever_frame_holds_its_cells():
    """Geo-heat's cities, /query by city under a filter of a few cities, and /query of one city:
    one family, one description; another range, another filter or another data version is another."""
    grouped = family_message(context(), SUPPRESSIONS, "city")
    assert family_message(context(fixed={"city": ("a", "b")}), SUPPRESSIONS, "city") == grouped
    assert family_message(context(dims=(), fixed={"city": ("a",)}), SUPPRESSIONS, "city") == grouped
    others = [
        family_message(context(time_range=TimeRange(MONTH.start, MONTH.end - dt.timedelta(hours=1))), SUPPRESSIONS, "city"),
        family_message(context(fixed={"platform": ("a", "b")}), SUPPRESSIONS, "city"),
        family_message(context(versions={MONTH.start.date(): 3}), SUPPRESSIONS, "city"),
        family_message(context(dims=("county",)), SUPPRESSIONS, "county"),
    ]
    assert grouped not in others and len(set(others)) == len(others)
    # No cell is described like a family (its own prefix), so no cell's noise is a family's.
    cells = cell_messages(pl.DataFrame({"city": ["*", "a"]}), context(), SUPPRESSIONS)
    assert grouped not in cells and all(not m.startswith(grouped[:4]) for m in cells)


def test_a_cell_in_a_family_spends_its_measures_epsilon_split_otherwise():
    """A cell in a family: its own pilot (family_cell_pilot_share), the family's pilot and the
    family's user count, and its sum together spend the measure's epsilon, as a cell's pilot and
    sum do outside a family; the sum gets what the pilots leave, more than outside a family (the
    cell leans on the family's mean, so its own pilot needs less)."""
    eps = PARAMS.epsilon("suppressions")
    family_pilot, family_users = PARAMS.family_alphas("suppressions")
    pilots = (PARAMS.pilot_epsilon("suppressions", in_family=True)
              - math.log(family_pilot) * PARAMS.pilot_cap   # the family's pilot: sensitivity pilot_cap
              - math.log(family_users))                     # its user count: sensitivity 1
    assert pilots == pytest.approx(eps * (PARAMS.family_cell_pilot_share + PARAMS.family_pilot_share
                                          + PARAMS.family_users_share)) == pytest.approx(0.07)
    assert pilots + PARAMS.summed_epsilon("suppressions", in_family=True) <= eps  # 0.96 of it: see release_epsilon
    assert PARAMS.pilot_epsilon("suppressions") + PARAMS.summed_epsilon("suppressions") == pytest.approx(eps)
    assert PARAMS.summed_epsilon("suppressions", in_family=True) == pytest.approx(0.89)
    assert PARAMS.summed_epsilon("suppressions") == pytest.approx(0.8)
    # Its sum's noise is drawn (and its s.d. shown) at that budget.
    assert PARAMS.noise_std("suppressions", 100, in_family=True) < PARAMS.noise_std("suppressions", 100)
    with pytest.raises(ValueError):
        PrivacyParams(family_pilot_share=0.15, family_users_share=0.05)
    with pytest.raises(ValueError):
        PrivacyParams(family_cell_pilot_share=0.98)
    with pytest.raises(ValueError):
        PrivacyParams(family_sum_share=0.95)  # with the pilot's 0.05 and the family's 0.02: more than 1
    with pytest.raises(ValueError):
        PrivacyParams(family_cell_pilot_share=0.0)


def test_release_epsilon_bounds_cells_in_a_family_and_out_of_one():
    """What one release costs (the budget's charges) is the larger of a cell out of a family and
    one in a family; the family's sum share is the most that keeps the two alike, so a place in a
    family costs no more than any other cell (1.334), and a larger share would cost more."""
    for measure in ("suppressions", "events"):
        out, within = PARAMS._summed_release(measure, False), PARAMS._summed_release(measure, True)
        assert PARAMS.release_epsilon(measure) == max(out, within) == out >= within > out - 0.01
        assert out == pytest.approx(1.334, abs=1e-3)
    more = dataclasses.replace(PARAMS, family_sum_share=0.93)
    assert more.release_epsilon("suppressions") == more._summed_release("suppressions", True) > 1.38
    old = dataclasses.replace(PARAMS, family_cell_pilot_share=0.18, family_sum_share=0.8)
    assert old._summed_release("suppressions", True) == pytest.approx(old._summed_release("suppressions", False), abs=1e-6)


def test_the_familys_mean_is_read_low_and_a_small_family_reads_one():
    pilot_sd = geometric_std(PARAMS.family_alphas("suppressions")[0])
    users_sd = geometric_std(PARAMS.family_alphas("suppressions")[1])
    assert family_mean(PARAMS, "suppressions", 17.0 * 400_000, 400_000) == pytest.approx(
        (17.0 * 400_000 - 2 * pilot_sd) / (400_000 + 2 * users_sd))
    assert 16.9 < family_mean(PARAMS, "suppressions", 17.0 * 400_000, 400_000) < 17.0
    assert family_mean(PARAMS, "suppressions", 20.0 * 300, 300) == 1.0    # its noise is larger than it
    assert family_mean(PARAMS, "suppressions", 10**9, 10) == PARAMS.pilot_cap
    assert family_mean(PARAMS, "suppressions", 0, 0) == 1.0
    assert family_mean(PrivacyParams.exact(), "suppressions", 5_000, 100) == 1.0


def caps(users: list[int], pilots: list[int], family: float | None) -> list[int]:
    in_family = family is not None
    alpha = math.exp(-PARAMS.pilot_epsilon("suppressions", in_family=in_family) / PARAMS.pilot_cap)

    def noisy_pilot(drawn_alpha: float) -> pl.Series:
        assert drawn_alpha == pytest.approx(alpha)  # a cell in a family draws its pilot at its smaller share
        return pl.Series(pilots, dtype=pl.Int64)

    return choose_caps(PARAMS, "suppressions", pl.Series(users, dtype=pl.Int64), noisy_pilot, family).to_list()


def test_a_few_dozen_heavy_users_are_capped_near_their_totals_in_a_heavy_family():
    """20 users of about 30 suppressions each over a month (pilot about 600, its noise s.d. about
    250): alone, the ceiling holds the cap at a quarter of the user count (5), cutting the sum by
    four fifths; in a family whose users bring 19 each, the cap reads the family's mean."""
    alone = caps([20], [600], None)[0]
    with_family = caps([20], [600], 19.0)[0]
    assert alone <= 5
    assert with_family >= math.ceil(PARAMS.cap_fit * 20 * PARAMS.family_low * 19) >= 38


def test_in_a_family_the_pilot_is_not_read_low_the_familys_mean_steadies_it():
    """Issue 41 (the small store's 30-day places): 60 users bringing 20 each to the pilot (1,200,
    its noise s.d. then about 250) in a family of 19.7 a user. Reading that pilot a noise s.d. low as
    well as leaning on the family capped them as light users; in a family the pilot is read
    family_shrink (0) s.d.s low, outside one pilot_shrink (1)."""
    sd = geometric_std(math.exp(-PARAMS.pilot_epsilon("suppressions", in_family=True) / PARAMS.pilot_cap))
    w = PARAMS.family_weight
    mean = (1_200 - PARAMS.family_shrink * sd + w * 19.7) / (60 + w)
    assert PARAMS.family_shrink == 0.0 < PARAMS.pilot_shrink
    assert caps([60], [1_200], 19.7)[0] == math.ceil(PARAMS.cap_multiplier * SCALE * mean) >= 159
    shrunk = dataclasses.replace(PARAMS, family_shrink=PARAMS.pilot_shrink)
    before = choose_caps(shrunk, "suppressions", pl.Series([60]), lambda _a: pl.Series([1_200]), 19.7)[0]
    assert before == math.ceil(PARAMS.cap_multiplier * SCALE * (1_200 - sd + w * 19.7) / (60 + w)) < 140
    # Without a family the pilot is read low as before.
    sd_alone = geometric_std(math.exp(-PARAMS.pilot_epsilon("suppressions") / PARAMS.pilot_cap))
    assert caps([500], [10_000], None)[0] == math.ceil(
        PARAMS.cap_multiplier * (10_000 - PARAMS.pilot_shrink * sd_alone) / 500
        * (1 + PARAMS.cap_growth * math.log10(500 / 100)))


def test_in_a_family_the_cap_stays_within_its_ceiling_whatever_the_draws():
    """cap <= cap_fit x SCALE x max(n^ x max(1, family_low x m), pilot^ - pilot_low x sd), at least
    the floor: the sum's noise (its scale cap / the sum's epsilon, SCALE times as large in a
    family) is a share of what the cell's sum is read to be at least, the same share as outside."""
    rng = random.Random(5)
    sd = geometric_std(math.exp(-PARAMS.pilot_epsilon("suppressions", in_family=True) / PARAMS.pilot_cap))
    for family in (1.0, 2.5, 19.0, 32.0):
        users = [rng.randint(10, 5_000) for _ in range(1_000)]
        pilots = [rng.randint(-1_000, 200_000) for _ in range(1_000)]
        for n, pilot, cap in zip(users, pilots, caps(users, pilots, family), strict=True):
            low = max(n * max(1.0, PARAMS.family_low * family), pilot - PARAMS.pilot_low * sd)
            assert PARAMS.cap_floor <= cap <= max(PARAMS.cap_floor, math.ceil(PARAMS.cap_fit * SCALE * low))


def test_a_family_that_reads_one_leaves_the_rule_as_without_one_but_for_the_budgets_split():
    users, pilots = [10, 40, 300, 100_000], [30, 2_000, 4_000, 1_600_000]
    sd_in = geometric_std(math.exp(-PARAMS.pilot_epsilon("suppressions", in_family=True) / PARAMS.pilot_cap))
    growth = 1 + PARAMS.cap_growth * math.log10(100_000 / 100)
    assert caps(users, pilots, 1.0)[3] == math.ceil(
        PARAMS.cap_multiplier * SCALE * (1_600_000 - sd_in) / 100_000 * growth)


def frame(cities: dict[str, tuple[int, int]]) -> pl.DataFrame:
    """Cities -> (users, suppressions a user)."""
    return pl.DataFrame({
        "city": list(cities),
        "unique_users": [u for u, _ in cities.values()],
        f"suppressions{PILOT}": [u * min(s, PARAMS.pilot_cap) for u, s in cities.values()],
        "_each": [s for _, s in cities.values()],
    })


def published(privacy: Privacy, cells: pl.DataFrame, cell: CellContext, family: pl.DataFrame | None = None) -> dict:
    per_user = cells.select("city", pl.col("_each").alias("suppressions"), "unique_users").with_columns(
        pl.int_ranges(pl.col("unique_users")).alias("u")).explode("u").drop("u", "unique_users")
    keys = ("city",) if "city" in cell.dims else ()
    shown = privacy.publish(cells.drop("_each"), cell, Contributions(per_user.drop("city") if not keys else per_user, keys),
                            noise_std=True, family=family.drop("_each") if family is not None else None)
    return {row["city"] if keys else "total": (row["suppressions"], row["suppressions_std"])
            for row in shown.iter_rows(named=True)}


CITIES = {f"c{i:03}": (20 + i % 50, 12 + i % 20) for i in range(300)}


def test_the_same_place_is_published_alike_whichever_frame_holds_it():
    """A month of one city: among every city (geo-heat), among a few cities grouped by city under a
    filter, and alone as a filter (a /query total) with its family passed beside it: the same
    number and the same noise s.d."""
    privacy = Privacy(SECRET)
    cells = frame(CITIES)
    everything = published(privacy, cells, context())
    few = cells.filter(pl.col("city").is_in(["c007", "c123"]))
    filtered = published(privacy, few, context(fixed={"city": ("c007", "c123")}), family=cells)
    for city in ("c007", "c123"):
        one = published(privacy, cells.filter(pl.col("city") == city), context(dims=(), fixed={"city": (city,)}),
                        family=cells)
        assert everything[city] == filtered[city] == one["total"]


def test_a_frame_that_does_not_hold_its_family_is_refused_without_it():
    privacy = Privacy(SECRET)
    cells = frame(CITIES).filter(pl.col("city") == "c007")
    with pytest.raises(ValueError, match="family"):
        published(privacy, cells, context(dims=(), fixed={"city": ("c007",)}))
    # Over a week or less there is no family: nothing else is needed.
    assert published(privacy, cells, context(dims=(), fixed={"city": ("c007",)}, time_range=WEEK))


def test_the_familys_releases_see_one_user_at_most_pilot_cap_and_one():
    """The family's pilot sums each user of each cell capped at pilot_cap (the cells' pilots), and
    its user count counts each user of each cell once: one more user in one cell moves them by at
    most pilot_cap and 1, whatever that user brings."""
    seen: list[tuple[str, int]] = []

    class Recording(Privacy):
        def _noisy(self, true, measure, uniforms, cap=None, alpha=None, layer=None, in_family=False):
            if true.len() == 1 and alpha is not None and alpha in self.params.family_alphas("suppressions"):
                seen.append((measure, int(true[0])))
            return super()._noisy(true, measure, uniforms, cap, alpha, layer, in_family)

    base = dict(CITIES)
    for heavy in (1, PARAMS.pilot_cap, 10**6):
        seen.clear()
        published(Recording(SECRET), frame(base), context())
        before = dict(seen)
        seen.clear()
        more = dict(base, c000=(base["c000"][0] + 1, base["c000"][1]))
        cells = frame(more).with_columns(  # the added user brings `heavy`
            pl.when(pl.col("city") == "c000").then(pl.col(f"suppressions{PILOT}") - min(more["c000"][1], PARAMS.pilot_cap)
                                                   + min(heavy, PARAMS.pilot_cap))
            .otherwise(pl.col(f"suppressions{PILOT}")).alias(f"suppressions{PILOT}"))
        published(Recording(SECRET), cells, context())
        after = dict(seen)
        assert 0 < after["suppressions_pilot"] - before["suppressions_pilot"] <= PARAMS.pilot_cap
        assert after["unique_users"] - before["unique_users"] == 1
