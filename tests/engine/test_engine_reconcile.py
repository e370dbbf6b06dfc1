"""Published numbers agree with each other (issue 42): in every row, the user count is at most the
events and suppressions (keyword activity: the list changes) of those users, on both engines. The
privacy stage is made to publish user counts far above the counts beside them; the answer must
lower them to the smallest of those counts and leave the counts (and so the order) as published."""

from __future__ import annotations

import polars as pl
import pytest

from service.engine.publication.reconcile import users_within_counts
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
)
from service.privacy import CellContext, Contributions, Privacy, PrivacyParams
from tests.support import fixture_data as fx
from tests.support.engines import Engine

pytestmark = pytest.mark.usefixtures("engine_kind")

AS_OF = fx.FIXTURE_AS_OF
INFLATE = 1_000_000


class Inflating(Privacy):
    """The exact stage, publishing every user count INFLATE higher than it is (as noise might, less)."""

    def __init__(self, inflate: int = INFLATE) -> None:
        super().__init__("exact", PrivacyParams.exact())
        self.inflate = inflate

    def publish(self, frame: pl.DataFrame, cell: CellContext, contributions: Contributions | None = None,
                noise_std: bool = False, family: pl.DataFrame | None = None) -> pl.DataFrame:
        shown = super().publish(frame, cell, contributions, noise_std, family)
        if "unique_users" not in shown.columns:
            return shown
        return shown.with_columns(
            pl.when(pl.col("unique_users") > 0).then(pl.col("unique_users") + self.inflate)
            .otherwise(pl.col("unique_users")).alias("unique_users"))


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


# method, request, the user field, the counts it may not exceed (top-keywords and geo-heat do not show
# their cells' events: the test adds the events /query publishes for the same cells)
CASES = [
    ("top_keywords", TopKeywords("7d", 50), "users_est", ["suppressions", "events"]),
    ("geo_heat", GeoHeat("7d", "region"), "unique_users", ["suppressions", "events"]),
    ("keyword_timeseries", KeywordTimeseries("snakes", "7d", "day"), "users_est", ["suppressions", "events"]),
    ("domain_timeseries", DomainTimeseries("x.com", "24h", "hour"), "users_est", ["suppressions", "events"]),
    ("keyword_activity", KeywordActivity("7d", "all", 50), "unique_users", ["total_events"]),
    ("query", FlexibleQuery("7d", {}, ("keyword", "platform"), None, limit=1000), "unique_users",
     ["suppressions", "events"]),
    ("query", FlexibleQuery("7d", {}, (), None), "unique_users", ["suppressions", "events"]),
]


def _with_events(frames, privacy, method, req, answer: pl.DataFrame) -> pl.DataFrame:
    """top-keywords' and geo-heat's records with their cells' events from /query (the same cells)."""
    if method not in ("top_keywords", "geo_heat"):
        return answer
    key, dimension = ("keyword_raw", "keyword") if method == "top_keywords" else ("geo_key", req.level)
    cells = Engine(privacy).query(frames, AS_OF, FlexibleQuery(req.window, {}, (dimension,), None, limit=1000))
    events = cells.select(pl.col(f"{dimension}_id" if dimension != "keyword" else "keyword").alias(key), "events")
    return answer.join(events, on=key, how="left", maintain_order="left")


@pytest.mark.parametrize(("method", "req", "users", "counts"), CASES, ids=[c[0] for c in CASES])
def test_a_user_count_never_exceeds_the_counts_beside_it(frames, method, req, users, counts) -> None:
    exact = getattr(Engine(Privacy("exact", PrivacyParams.exact())), method)(frames, AS_OF, req)
    inflated = getattr(Engine(Inflating()), method)(frames, AS_OF, req)
    exact = _with_events(frames, Privacy("exact", PrivacyParams.exact()), method, req, exact)
    inflated = _with_events(frames, Inflating(), method, req, inflated)
    assert "events" not in inflated.columns or inflated["events"].null_count() == 0
    assert inflated.height == exact.height and inflated.height > 0
    # The counts and the order are as published ...
    assert inflated.drop(users).equals(exact.drop(users))
    # ... and each user count is the smallest count beside it (it was above them all).
    lowest = inflated.select(pl.min_horizontal(counts)).to_series()
    assert inflated[users].to_list() == lowest.to_list()
    assert (inflated[users] > 0).any()


def test_the_exact_numbers_already_agree(frames) -> None:
    """What the reconciliation restores is what exact counts always satisfy (on the fixture, without
    noise)."""
    for method, req, users, counts in CASES:
        exact = getattr(Engine(Privacy("exact", PrivacyParams.exact())), method)(frames, AS_OF, req)
        exact = _with_events(frames, Privacy("exact", PrivacyParams.exact()), method, req, exact)
        assert (exact[users] <= exact.select(pl.min_horizontal(counts)).to_series()).all(), method


def test_users_within_counts() -> None:
    frame = pl.DataFrame({"u": [258, 5, 0, 9], "a": [239, 7, 0, 9], "b": [300, 4, 3, 10]},
                         schema={"u": pl.Int64, "a": pl.Int64, "b": pl.Int64})
    assert users_within_counts(frame, "u", ["a", "b"])["u"].to_list() == [239, 4, 0, 9]  # 258 > 239 moves; 9 stays
    assert users_within_counts(frame, "u", ["a", "b"]).drop("u").equals(frame.drop("u"))
    assert users_within_counts(frame, "u", []).equals(frame)


def test_a_lowered_user_count_keeps_the_top_of_its_interval() -> None:
    """With intervals, how far a user count was lowered is kept (and dropped with the noise s.d.s):
    its interval's top stays where the draw put it, so lowering never costs coverage."""
    from service.engine.intervals import INTERVALS, with_intervals
    from service.engine.noise_std import LOWERED, STD, std_columns
    from service.engine.shapes import SHAPES

    frame = pl.DataFrame({"u": [258, 5], "a": [239, 7], "u_std": [1.4, 1.4], "a_std": [3.0, 3.0]})
    lowered = users_within_counts(frame, "u", ["a"])
    assert lowered["u"].to_list() == [239, 5] and lowered[f"u{LOWERED}"].to_list() == [19.0, 0.0]
    assert f"u{LOWERED}" not in users_within_counts(frame.drop("u_std"), "u", ["a"]).columns  # no intervals asked
    records = lowered.select("a", pl.col("u").alias("users_est"),
                             *std_columns(True, {"a": "suppressions", "u": "users_est"}, lowered.columns))
    records = records.rename({"a": "suppressions"})
    assert records.columns == ["suppressions", "users_est", f"suppressions{STD}", f"users_est{STD}",
                               f"users_est{LOWERED}"]
    shape = SHAPES["top_keywords"]
    lifted = with_intervals(records, shape, PrivacyParams())[INTERVALS].struct.field("users_est").to_list()
    plain = with_intervals(records.drop(f"users_est{LOWERED}"), shape, PrivacyParams())[INTERVALS]
    plain_tops = [high for _low, high in plain.struct.field("users_est").to_list()]
    assert [high for _low, high in lifted] == [plain_tops[0] + 19, plain_tops[1]]
    assert lifted[0][1] >= 258  # the draw's value is inside again
