"""A grouping by time bucket computed part by part (`slicing.bucket_parts`), and the per-user
contributions reduced to the users a cap can reach (`contributions.cell_contributions`): the same
cells, the same capped sums and the same published answers as in one piece."""

from __future__ import annotations

import datetime as dt
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.api.windows import polars_every
from service.engine.measures import EVENTS, SUPPRESSIONS
from service.engine.polars import slicing
from service.engine.polars.contributions import bucket_key, cell_contributions
from service.engine.polars.slicing import bucket_parts
from service.engine.requests import FlexibleQuery
from service.privacy import Privacy, PrivacyParams
from tests.support import fixture_data as fx
from tests.support.engines import Engine

UTC = dt.UTC
START = dt.datetime(2026, 3, 2, 5, 17, tzinfo=UTC)  # a Monday


def events(n: int, seed: int = 3, days: int = 40) -> pl.DataFrame:
    """`n` events sorted by time over `days` days: a few heavy users (many events a cell) among
    many light ones, so that some users' totals pass the smallest cap and most do not."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        heavy = rng.random() < 0.3
        rows.append({
            "ts": START + dt.timedelta(seconds=rng.randrange(days * 86_400)),
            "user_id": rng.randrange(5) if heavy else rng.randrange(10_000),
            "keyword": rng.choice(["alpha", "beta", "gamma"]),
            "suppressions": rng.randrange(1, 4),
        })
    return pl.DataFrame(rows, schema={"ts": pl.Datetime("us", "UTC"), "user_id": pl.UInt64,
                                      "keyword": pl.String, "suppressions": pl.Int32}).sort("ts")


def buckets(frame: pl.DataFrame, bucket: str) -> pl.Series:
    return frame.get_column("ts").dt.truncate(polars_every(bucket))


@pytest.mark.parametrize("bucket", ["hour", "day", "week"])
@pytest.mark.parametrize("rows", [1, 7, 50, 333, 10_000])
def test_parts_cover_the_frame_in_order_and_never_split_a_bucket(bucket: str, rows: int) -> None:
    frame = events(2_000)
    parts = bucket_parts(frame, bucket, rows)
    assert all(part.height for part in parts)
    assert_frame_equal(pl.concat(parts), frame)
    for before, after in zip(parts, parts[1:], strict=False):
        assert buckets(before, bucket).max() < buckets(after, bucket).min()
    if rows >= frame.height:
        assert len(parts) == 1
    else:  # a cut at every bucket start reachable: parts are about `rows` long, not one piece
        assert len(parts) > 1


def test_a_bucket_larger_than_a_part_stays_whole() -> None:
    frame = events(2_000, days=3)  # three days from 05:17 over four UTC days: 500-odd rows a day
    parts = bucket_parts(frame, "day", rows=100)
    assert len(parts) == buckets(frame, "day").n_unique() == 4
    assert [buckets(part, "day").n_unique() for part in parts] == [1, 1, 1, 1]


def test_an_empty_frame_is_one_empty_part() -> None:
    empty = events(10).clear()
    parts = bucket_parts(empty, "hour", rows=5)
    assert [part.height for part in parts] == [0]


def test_the_default_part_size_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slicing, "PART_ROWS", 100)
    assert len(bucket_parts(events(1_000), "hour")) > 5


@pytest.mark.parametrize("bucket", ["hour", "day", "week"])
def test_parts_give_the_same_cells_and_capped_sums(bucket: str) -> None:
    frame = events(3_000)
    params = PrivacyParams()
    keys = ["keyword", bucket_key(bucket)]
    whole_cells, whole = cell_contributions(frame, keys, params)
    part_cells, parted = cell_contributions(bucket_parts(frame, bucket, 211), keys, params)
    order = ["keyword", "ts"]
    assert_frame_equal(part_cells.sort(order), whole_cells.sort(order))
    assert_frame_equal(parted.totals.sort(order), whole.totals.sort(order))
    # The capped sums the privacy stage takes from them, for any cap it can choose (none is below
    # the smallest cap: the users left out are those it cannot reach).
    for cap in (params.smallest_cap(), params.smallest_cap() + 1, 40, params.max_cap):
        caps = whole_cells.select(order).with_columns(pl.lit(cap).alias(f"{m}_cap") for m in (SUPPRESSIONS, EVENTS))
        expected = (
            frame.group_by([*order[:1], buckets(frame, bucket).alias("ts"), "user_id"])
            .agg(pl.col("suppressions").sum().cast(pl.Int64).alias(SUPPRESSIONS), pl.len().cast(pl.Int64).alias(EVENTS))
            .group_by(order)
            .agg(pl.col(m).clip(upper_bound=cap).sum() for m in (SUPPRESSIONS, EVENTS))
        )
        for contributions in (whole, parted):
            got = contributions.capped_sums(caps, [SUPPRESSIONS, EVENTS]).select(*order, SUPPRESSIONS, EVENTS)
            assert_frame_equal(got.sort(order), expected.sort(order), check_column_order=False)


def test_contributions_keep_only_users_a_cap_can_reach() -> None:
    frame = events(3_000)
    params = PrivacyParams()
    smallest = params.smallest_cap()
    _cells, contributions = cell_contributions(frame, ["keyword"], params)
    kept = contributions.per_user
    assert kept.height  # the heavy users
    assert kept.filter((pl.col(SUPPRESSIONS) <= smallest) & (pl.col(EVENTS) <= smallest)).height == 0
    every_user = frame.group_by("keyword", "user_id").agg(pl.col("suppressions").sum(), pl.len())
    reachable = every_user.filter((pl.col("suppressions") > smallest) | (pl.col("len") > smallest))
    assert kept.height == reachable.height < every_user.height


def test_no_keys_keeps_every_user_and_parts_need_the_time_bucket() -> None:
    frame = events(500)
    cells, contributions = cell_contributions(frame, [], PrivacyParams())
    assert contributions.totals is None
    assert contributions.per_user.height == frame.get_column("user_id").n_unique() == cells.item(0, "unique_users")
    for keys in ([], ["keyword"]):  # without the bucket among the keys, a cell could span parts
        with pytest.raises(ValueError, match="time bucket among the keys"):
            cell_contributions(bucket_parts(frame, "day", 50), keys, PrivacyParams())


# Trending reduces through cell_contributions too; on the fixture's few rows no growth beats the
# noise, so its answer would be empty either way and prove nothing here.
@pytest.mark.parametrize("endpoint", ["top_keywords", "keyword_activity", "geo_heat", "query"])
def test_leaving_out_the_users_no_cap_reaches_changes_no_answer(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """Every engine stage that reduces its contributions (`privacy.reachable_rows`) answers as it
    would with every user kept, with noise and small caps (many users above them)."""
    from service.engine.requests import GeoHeat, KeywordActivity, TopKeywords

    requests = {
        "top_keywords": TopKeywords("30d", 50),
        "keyword_activity": KeywordActivity("90d", "all", 50),
        "geo_heat": GeoHeat("90d", "country"),
        "query": FlexibleQuery(window="90d", filters={}, group_by=("keyword", "time"), bucket="day", limit=500),
    }
    frames = fx.fixture_frames()
    privacy = Privacy("reachable-test-secret", PrivacyParams(min_users=1, cap_multiplier=1.0, cap_growth=0.0, cap_floor=1))
    assert privacy.params.smallest_cap() == 1
    reduced = getattr(Engine(privacy), endpoint)(frames, fx.FIXTURE_AS_OF, requests[endpoint])
    monkeypatch.setattr(PrivacyParams, "smallest_cap", lambda self: 0)  # keeps every user with a total
    everyone = getattr(Engine(privacy), endpoint)(frames, fx.FIXTURE_AS_OF, requests[endpoint])
    assert reduced.height
    assert_frame_equal(reduced, everyone)


@pytest.mark.parametrize("group_by, bucket", [(("keyword", "time"), "day"), (("time",), "hour"),
                                              (("time", "platform"), "week")])
def test_a_published_query_is_the_same_in_parts(monkeypatch: pytest.MonkeyPatch, group_by, bucket) -> None:
    """With the real privacy stage (noise, caps, suppression): parts of a few rows give the
    answer of one part, byte for byte."""
    frames = fx.fixture_frames()
    request = FlexibleQuery(window="90d", filters={}, group_by=group_by, bucket=bucket, limit=1000)
    privacy = Privacy("parts-test-secret", PrivacyParams(min_users=1))
    whole = Engine(privacy).query(frames, fx.FIXTURE_AS_OF, request)
    monkeypatch.setattr(slicing, "PART_ROWS", 3)
    assert len(bucket_parts(frames.suppressions, bucket)) > 3
    assert_frame_equal(Engine(privacy).query(frames, fx.FIXTURE_AS_OF, request), whole)
