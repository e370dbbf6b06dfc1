"""The pure parts of compare and intervals (issue 25): frames in, frames out."""

from __future__ import annotations

import datetime as dt
import math

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.answers.render import csv_body, flattened
from service.engine.compare import bucket_mapper, with_previous
from service.engine.growth import CONFIDENCE_Z, COUNT_Z, beyond_noise
from service.engine.intervals import CAP_BIAS, CEILING_BIAS, NEAR_K, noise_bound, with_intervals
from service.engine.polars import PolarsEngine as Engine
from service.engine.requests import GeoHeat, KeywordActivity, KeywordTimeseries, TopKeywords
from service.engine.shapes import SHAPES
from service.privacy import Privacy, PrivacyParams
from tests.support.fixture_data import FIXTURE_AS_OF, fixture_frames

UTC = dt.UTC


def _std(alpha: float) -> float:
    return math.sqrt(2 * alpha) / (1 - alpha)


def _tail(alpha: float, k: int) -> float:
    """P(|noise| > k) of two-sided geometric noise."""
    return 2 * alpha ** (k + 1) / (1 + alpha)


@pytest.mark.parametrize("alpha", [math.exp(-1), math.exp(-0.8 / 8), math.exp(-0.8 / 256), math.exp(-1 / 20)])
def test_the_noise_bound_is_the_smallest_whole_90_percent_bound(alpha):
    k = pl.select(noise_bound(pl.lit(_std(alpha)))).item()
    assert k == int(k) and _tail(alpha, int(k)) <= 0.10 < _tail(alpha, int(k) - 1)
    assert pl.select(noise_bound(pl.lit(0.0))).item() == 0


def test_user_counts_get_plus_or_minus_2():
    shape = SHAPES["geo_heat"]
    params = PrivacyParams()
    frame = pl.DataFrame({"geo_key": ["US"], "suppressions": [0], "unique_users": [50], "keyword_count": [7],
                          "suppressions_std": [0.0], "unique_users_std": [params.noise_std("unique_users")],
                          "keyword_count_std": [params.noise_std("keyword_count")]})
    intervals = with_intervals(frame, shape, params).get_column("intervals").struct.field("unique_users")
    assert intervals.to_list() == [[48, 52]]


def _sum_bounds(cap: float, values: list[int], users: int) -> tuple[list[list[int]], int]:
    """The suppressions intervals of top-keywords records with these values, all of `users` users
    and a cap of `cap` (known to the intervals from the noise's s.d.), and the noise bound k."""
    sd = _std(math.exp(-0.8 / cap))
    frame = pl.DataFrame({"keyword_raw": [str(i) for i in range(len(values))], "suppressions": values,
                          "users_est": [users] * len(values), "suppressions_std": [sd] * len(values),
                          "users_est_std": [1.4] * len(values)})
    bounds = with_intervals(frame, SHAPES["top_keywords"], PrivacyParams()).get_column("intervals").struct.field("suppressions")
    return bounds.to_list(), pl.select(noise_bound(pl.lit(sd))).item()


def test_a_capped_sum_reaches_up_by_the_cap_term():
    cap = 100.0
    bounds, k = _sum_bounds(cap, [1000, 5000], 100)
    # a: 1000 over the fewest users the count allows (100 - 2) against a cap of 100: q about 0.1;
    # b: q about 0.5
    fewest = 100 - 2
    assert bounds[0] == [1000 - k, math.ceil(1000 + k + CAP_BIAS * 1000 * (1000 / fewest / cap) ** 2)]
    assert bounds[1] == [5000 - k, math.ceil(5000 + k + CAP_BIAS * 5000 * (5000 / fewest / cap) ** 2)]


def test_a_sum_whose_cap_is_its_ceiling_reaches_up_by_the_ceiling_term():
    """A cell of 20 users whose cap is the ceiling's (cap_fit x 20 = 5): its users may bring far more
    than the cap, so with every user at the cap (q = 1) its sum may be many times what is shown."""
    cap = 5.0
    bounds, k = _sum_bounds(cap, [36, 90], 20)
    q = [min(v / 18 / cap, 1.0) for v in (36, 90)]  # 18: the fewest users a count of 20 allows
    assert bounds == [[36 - k, math.ceil(36 + k + CEILING_BIAS * 36 * q[0] ** 3)],
                      [90 - k, math.ceil(90 + k + CEILING_BIAS * 90 * q[1] ** 3)]]
    assert bounds[1][1] > 10 * 90


def test_a_user_count_just_above_k_reaches_down_by_what_its_noise_may_have_lifted():
    params = PrivacyParams()
    frame = pl.DataFrame({"keyword_raw": ["a", "b", "c"], "suppressions": [30, 30, 30], "users_est": [10, 12, 20],
                          "suppressions_std": [8.0] * 3, "users_est_std": [params.noise_std("unique_users")] * 3})
    bounds = with_intervals(frame, SHAPES["top_keywords"], params).get_column("intervals").struct.field("users_est")
    assert params.min_users == 10
    assert bounds.to_list() == [[10 - 2 - NEAR_K, 12], [12 - 2 - (NEAR_K - 2), 14], [18, 22]]


def test_derived_counts_take_their_parts_intervals():
    engine = Engine(Privacy("intervals"))
    frame = engine.keyword_activity(fixture_frames(), FIXTURE_AS_OF, KeywordActivity("30d", "all", 50, intervals=True))
    assert frame.height
    for row in frame.iter_rows(named=True):
        i = row["intervals"]
        assert i["total_events"] == [i["adds"][0] + i["removes"][0] + i["edits"][0],
                                     i["adds"][1] + i["removes"][1] + i["edits"][1]]
        assert i["net_adds"] == [i["adds"][0] - i["removes"][1], i["adds"][1] - i["removes"][0]]
        for name, (low, high) in i.items():
            assert low <= row[name] <= high, (name, row)


def test_without_noise_an_interval_is_the_number_itself():
    engine = Engine(Privacy.exact())
    frame = engine.top_keywords(fixture_frames(), FIXTURE_AS_OF, TopKeywords("24h", 5, intervals=True))
    for row in frame.iter_rows(named=True):
        assert row["intervals"] == {"suppressions": [row["suppressions"]] * 2, "users_est": [row["users_est"]] * 2}


def test_without_the_flags_the_engine_answers_exactly_as_before():
    frames = fixture_frames()
    engine = Engine(Privacy("same"))
    for method, request in ((engine.top_keywords, TopKeywords("7d", 20)), (engine.geo_heat, GeoHeat("30d", "region")),
                            (engine.keyword_timeseries, KeywordTimeseries("snakes", "7d", "day"))):
        plain = method(frames, FIXTURE_AS_OF, request)
        both = method(frames, FIXTURE_AS_OF, type(request)(**{**request.__dict__, "compare": "previous_period",
                                                               "intervals": True}))
        assert_frame_equal(both.select(plain.columns), plain)
        assert both.columns == [*plain.columns, "previous", "change", "intervals"]


def test_with_previous_joins_fills_and_tests_the_change():
    shape = SHAPES["top_keywords"]
    current = pl.DataFrame({"keyword_raw": ["up", "flat", "new"], "suppressions": [2000, 1010, 50],
                            "users_est": [400, 100, 12], "rank": [1, 2, 3],
                            "suppressions_std": [50.0, 50.0, 20.0], "users_est_std": [1.4, 1.4, 1.4]})
    previous = pl.DataFrame({"keyword_raw": ["flat", "up", "gone"], "suppressions": [1000, 300, 70],
                             "users_est": [100, 50, 15], "rank": [1, 2, 3],
                             "suppressions_std": [50.0, 50.0, 20.0], "users_est_std": [1.4, 1.4, 1.4]})
    out = with_previous(current, previous, shape, ("keyword_raw",))
    assert out.columns == [*current.columns, "previous", "change"]
    rows = {r["keyword_raw"]: r for r in out.iter_rows(named=True)}
    assert rows["up"]["previous"] == {"suppressions": 300, "users_est": 50}
    assert rows["up"]["change"]["suppressions"] == {"pct": 566.67, "beyond_noise": True}
    assert rows["flat"]["change"]["suppressions"] == {"pct": 1.0, "beyond_noise": False}
    assert rows["new"]["previous"] == {"suppressions": 0, "users_est": 0}
    assert rows["new"]["change"]["suppressions"]["pct"] is None
    # beyond noise: |change| > sqrt((z sd)^2 of each side + 3.09^2 x (count of each side, at least 1))
    margin = math.sqrt(2 * (CONFIDENCE_Z * 20.0) ** 2 + COUNT_Z**2 * (50 + 1))
    assert rows["new"]["change"]["suppressions"]["beyond_noise"] is (margin < 50)


def test_net_adds_varies_like_adds_plus_removes():
    shape = SHAPES["keyword_activity"]
    columns = ("adds", "removes", "edits", "total_events", "unique_users", "net_adds")

    def frame(adds, removes):
        values = {"adds": adds, "removes": removes, "edits": 0, "total_events": adds + removes,
                  "unique_users": 100, "net_adds": adds - removes}
        return pl.DataFrame({"keyword": ["k"], **{c: [values[c]] for c in columns}, **{f"{c}_std": [1.0] for c in columns}})

    # net_adds 0 -> 60 with adds and removes in the thousands: within chance (sqrt(4000) x 3.09 each side)
    out = with_previous(frame(2030, 1970), frame(2000, 2000), shape, ("keyword",))
    assert out.row(0, named=True)["change"]["net_adds"] == {"pct": None, "beyond_noise": False}


def test_a_bucket_is_compared_with_the_bucket_one_window_earlier():
    shape = SHAPES["keyword_timeseries"]
    hours = [dt.datetime(2026, 3, 10, h, tzinfo=UTC) for h in (10, 11)]
    current = pl.DataFrame({"ts": hours, "suppressions": [5, 6], "users_est": [1, 1], "events": [1, 1],
                            **{f"{m}_std": [1.0, 1.0] for m in ("suppressions", "users_est", "events")}})
    previous = current.with_columns(pl.col("ts") - dt.timedelta(days=1), pl.Series("suppressions", [50, 60]))
    out = with_previous(current, previous, shape, ("ts",), bucket_mapper("24h", FIXTURE_AS_OF, "hour"))
    assert out.get_column("previous").struct.field("suppressions").to_list() == [50, 60]
    assert out.get_column("ts").to_list() == hours


def test_csv_flattens_nested_fields():
    frame = pl.DataFrame({"keyword": ["a"], "suppressions": [3]}).with_columns(
        pl.struct(pl.lit(2).alias("suppressions")).alias("previous"),
        pl.struct(pl.struct(pl.lit(50.0).alias("pct"), pl.lit(True).alias("beyond_noise")).alias("suppressions"))
        .alias("change"),
        pl.struct(pl.concat_list(pl.lit(1), pl.lit(5)).alias("suppressions")).alias("intervals"),
    )
    assert flattened(frame).columns == ["keyword", "suppressions", "previous_suppressions",
                                        "change_suppressions_pct", "change_suppressions_beyond_noise",
                                        "intervals_suppressions_low", "intervals_suppressions_high"]
    assert csv_body(frame).decode("utf-8-sig").splitlines()[1] == "a,3,2,50.0,true,1,5"


def _two_sided_geometric(rng, alpha: float, n: int):
    """Privacy noise: the difference of two geometric draws (discrete Laplace), sd sqrt(2 alpha)/(1-alpha)."""
    return rng.geometric(1 - alpha, n) - rng.geometric(1 - alpha, n)


@pytest.mark.parametrize(("mean", "alpha"), [(20, 0.5), (1_000, 0.9), (15_000, 0.997), (15_000, 0.5), (200, 0.99)])
def test_flat_values_are_rarely_beyond_noise(mean, alpha):
    """Simulated flat values (the same expected count in both periods, each period with its own
    chance variation and its own noise draw) are flagged at about the rate the rule promises: each
    part one-sided 1/1000, the test two-sided, so at most about 2 in 1,000."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(mean)
    n = 400_000
    std = math.sqrt(2 * alpha) / (1 - alpha)
    now = rng.poisson(mean, n) + _two_sided_geometric(rng, alpha, n)
    then = rng.poisson(mean, n) + _two_sided_geometric(rng, alpha, n)
    frame = pl.DataFrame({"now": now, "then": then, "std": [std] * n})
    flagged = frame.select(beyond_noise(pl.col("now"), pl.col("then"), current_chance=pl.col("now"),
                                        previous_chance=pl.col("then"), current_std=pl.col("std"),
                                        previous_std=pl.col("std")).mean()).item()
    assert flagged < 0.0025, flagged


def test_a_change_of_five_standard_deviations_is_beyond_noise():
    """The demo's California, 7 days: 14,965 -> 17,417 suppressions with noise sd 267 and 304. Noise
    and chance together have sd sqrt(267^2 + 304^2 + 14,965 + 17,417) = 443: the change is 5.5 of
    them. Margins added end to end (3,293) called it within noise; in quadrature the margin is 1,861."""
    frame = pl.DataFrame({"now": [17_417], "then": [14_965], "now_std": [304.0], "then_std": [267.0]})
    judged = beyond_noise(pl.col("now"), pl.col("then"), current_chance=pl.col("now"), previous_chance=pl.col("then"),
                          current_std=pl.col("now_std"), previous_std=pl.col("then_std"))
    assert frame.select(judged).item() is True
    assert frame.with_columns(pl.col("now") - 700).select(judged).item() is False  # 1,752 < 1,861
