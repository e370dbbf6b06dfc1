"""The privacy guarantees end to end, on realistic demo data with the real stage (noise, caps,
k = 10) and the response cache off, so that every request below is computed afresh."""

from __future__ import annotations

import datetime as dt
import statistics
import uuid

import falcon.testing
import polars as pl
import pytest

from cache import LocalGate
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.demo.generate import generate_demo
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.http import get, post_query
from tests.support.landing import write_events

DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
NOW = DEMO_END + dt.timedelta(minutes=20)
RARE = 60  # keywords used by exactly one user each: the small groups of the differencing test


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("privacy-demo")
    generate_demo(data_dir, events=80_000, days=30, seed=11, end=DEMO_END, secret="test", progress=False)
    one = pl.read_parquet(next((data_dir / "suppressions").rglob("*.parquet"))).head(1)
    rare = pl.concat([
        one.with_columns(pl.lit(f"rare keyword {i}").alias("keyword"), pl.lit(5, dtype=pl.Int32).alias("suppressions"),
                         pl.lit(10_000_000 + i, dtype=pl.UInt64).alias("user_id"),
                         pl.lit(DEMO_END - dt.timedelta(hours=3)).dt.cast_time_unit("us").alias("ts"))
        for i in range(RARE)
    ])
    write_events(data_dir, "suppressions", rare)
    return data_dir


@pytest.fixture(scope="module")
def demo_store(demo_dir):
    return EventStore(demo_dir)


def make_client(demo_dir, demo_store, accounts, secret="privacy-test-secret"):
    settings = Settings(data_dir=demo_dir, secret=secret, cache_responses=False)
    return falcon.testing.TestClient(create_app(settings, clock=FixedClock(NOW), store=demo_store,
                                                accounts=accounts, gate=LocalGate()))


@pytest.fixture
def client(demo_dir, demo_store, accounts):
    return make_client(demo_dir, demo_store, accounts)


@pytest.fixture
def key(accounts):
    return accounts.create_key(Tier.PROFESSIONAL, subscription=f"privacy-{uuid.uuid4().hex[:8]}")[0]


def top(client, key, window="7d", limit=50):
    return get(client, "/top-keywords", key, {"window": window, "limit": str(limit)}).json["keywords"]


def test_same_request_same_bytes_even_from_another_process(client, key, demo_dir, demo_store, accounts):
    first = get(client, "/top-keywords", key, {"window": "7d"}).content
    assert get(client, "/top-keywords", key, {"window": "7d"}).content == first
    other = make_client(demo_dir, demo_store, accounts)  # a fresh app: nothing remembered
    assert get(other, "/top-keywords", key, {"window": "7d"}).content == first


def test_a_different_secret_gives_different_noise(client, key, demo_dir, demo_store, accounts):
    ours = {k["keyword_raw"]: k["suppressions"] for k in top(client, key)}
    theirs = {k["keyword_raw"]: k["suppressions"]
              for k in top(make_client(demo_dir, demo_store, accounts, secret="other"), key)}
    common = set(ours) & set(theirs)
    assert len(common) > 20 and sum(ours[k] != theirs[k] for k in common) > len(common) * 0.8


def test_the_numbers_are_noisy(client, key, demo_store):
    exact = demo_store.snapshot().suppressions
    start = DEMO_END - dt.timedelta(days=7)
    true = dict(exact.filter(pl.col("ts") >= start).group_by("keyword").agg(pl.col("suppressions").sum())
                .with_columns(pl.col("keyword").cast(pl.String)).iter_rows())
    shown = top(client, key)
    assert sum(k["suppressions"] != true[k["keyword_raw"]] for k in shown) > len(shown) * 0.8


def test_top_keywords_and_query_agree_on_a_cell(client, key):
    for record in top(client, key, limit=10):
        word = record["keyword_raw"]
        grouped = post_query(client, key, {"window": "7d", "filters": {"keywords": [word]}, "group_by": ["keyword"]})
        totals = post_query(client, key, {"window": "7d", "filters": {"keywords": [word.upper()]}})
        all_rows = post_query(client, key, {"window": "7d", "group_by": ["keyword"], "limit": 1000})
        from_all = next(r for r in all_rows.json["results"] if r["keyword"] == word)
        for result in (grouped.json["results"][0], totals.json["results"][0], from_all):
            assert (result["suppressions"], result["unique_users"]) == (record["suppressions"], record["users_est"])


def test_timeseries_buckets_agree_with_query_time_buckets(client, key):
    word = top(client, key, limit=1)[0]["keyword_raw"]
    series = get(client, "/keyword-timeseries", key, {"keyword": word, "window": "7d", "bucket": "day"}).json
    by_day = {b["ts"]: b for b in series["timeseries"]}
    query = post_query(client, key, {"window": "7d", "filters": {"keywords": [word]}, "group_by": ["time"],
                                     "bucket": "day"}).json["results"]
    assert query
    for row in query:
        bucket = by_day[row["ts"]]
        assert (bucket["suppressions"], bucket["users_est"], bucket["events"]) == (
            row["suppressions"], row["unique_users"], row["events"])


def test_trending_recent_period_agrees_with_a_6h_query(client, key):
    """The recent period of /trending (24h: the last 6 hours; 7d: the last 24) is the /query cell
    of that window. Which keywords trend depends on the noise: both windows are checked, at least
    one lists some."""
    listed = 0
    for window, recent in (("24h", "6h"), ("7d", "24h")):
        trending = get(client, "/trending", key, {"window": window, "min_baseline": "0"}).json["trending"]
        listed += len(trending)
        for record in trending[:5]:
            alone = post_query(client, key, {"window": recent, "filters": {"keywords": [record["value"]]}})
            assert alone.json["results"][0]["suppressions"] == record["recent"]
    assert listed


def test_geo_heat_agrees_with_query_by_country(client, key):
    heat = get(client, "/geo-heat", key, {"window": "7d"}).json["regions"]
    rows = {r["country_id"]: r for r in post_query(client, key, {"window": "7d", "group_by": ["country"],
                                                                  "limit": 1000}).json["results"]}
    for unit in heat:
        assert (unit["suppressions"], unit["unique_users"]) == (rows[unit["geo_key"]]["suppressions"],
                                                              rows[unit["geo_key"]]["unique_users"])


@pytest.mark.parametrize("level", ["country", "city"])
def test_a_place_over_a_month_is_published_alike_whichever_query_holds_it(client, key, level):
    """Over more than a week a place's cap reads its family's mean per user (every place of its
    level): geo-heat, /query by that level, /query by it under a filter of two places, and /query
    of that one place (for which the engine computes the family beside it) publish the same
    numbers for it. A week or less has no family and agrees likewise."""
    for window in ("30d", "7d"):
        heat = get(client, "/geo-heat", key, {"window": window, "level": level}).json["regions"]
        assert len(heat) >= 3
        rows = {r[f"{level}_id"]: r for r in post_query(client, key, {"window": window, "group_by": [level],
                                                                       "limit": 1000}).json["results"]}
        plural = {"country": "countries", "city": "cities"}[level]
        pair = [heat[1]["geo_key"], heat[-1]["geo_key"]]
        two = {r[f"{level}_id"]: r for r in post_query(client, key, {"window": window, "filters": {plural: pair},
                                                                      "group_by": [level]}).json["results"]}
        for unit in (heat[1], heat[-1]):
            alone = post_query(client, key, {"window": window, "filters": {plural: [unit["geo_key"]]}}).json["results"][0]
            for other in (rows[unit["geo_key"]], two[unit["geo_key"]], alone):
                assert (other["suppressions"], other["unique_users"]) == (unit["suppressions"], unit["unique_users"])


def test_averaging_hundreds_of_rephrasings_learns_one_value(client, key):
    """Re-ordered parameters, other limits, other spellings and other query shapes all return
    the same noisy number for the cell, so their average is that one published value."""
    word = top(client, key, limit=1)[0]["keyword_raw"]
    seen = []
    for limit in range(1, 101):
        seen.append(top(client, key, limit=limit)[0]["suppressions"])
    spellings = [word, word.upper(), f"  {word}  ", word.title(), word.replace(" ", "   ")]
    for i in range(100):
        spelling = spellings[i % len(spellings)]
        body = {"limit": 1 + i, "filters": {"keywords": [spelling, spelling]}, "window": "7d"}
        if i % 2:
            body["group_by"] = ["keyword"]
        seen.append(post_query(client, key, body).json["results"][0]["suppressions"])
    assert len(seen) == 200 and len(set(seen)) == 1


def test_small_groups_are_not_published(client, key):
    for i in range(5):
        word = f"rare keyword {i}"
        totals = post_query(client, key, {"window": "24h", "filters": {"keywords": [word]}}).json["results"]
        assert totals == [{"suppressions": 0, "unique_users": 0, "events": 0}]  # the totals row, suppressed
        series = get(client, "/keyword-timeseries", key, {"keyword": word, "window": "24h"}).json["timeseries"]
        assert all(b["suppressions"] == b["users_est"] == b["events"] == 0 for b in series)
    listed = {k["keyword_raw"] for k in top(client, key, window="24h", limit=500)}
    assert not any(word.startswith("rare keyword") for word in listed)


def test_differencing_overlapping_filters_does_not_reveal_a_small_group(client, key):
    """Asking for {big, rare_i} and for {big} and subtracting targets rare_i (one user, 5
    suppressions). Asked directly, rare_i is suppressed (test above). The differences are
    dominated by the cells' independent noise. A keyword that no stored event holds matches
    nothing, so {big, absent} is the cell {big} itself, with its noise: its difference is 0
    (one meaning, one noise). That a value occurs somewhere in the store is what this reveals;
    how often, when and by whom it does not (docs/privacy.md, "What this guarantees")."""
    big = top(client, key, window="24h", limit=1)[0]["keyword_raw"]
    base = post_query(client, key, {"window": "24h", "filters": {"keywords": [big]}}).json["results"][0]["suppressions"]

    def differences(words: list[str]) -> list[int]:
        return [post_query(client, key, {"window": "24h", "filters": {"keywords": [big, word]}})
                .json["results"][0]["suppressions"] - base for word in words]

    present = differences([f"rare keyword {i}" for i in range(RARE)])
    absent = differences([f"no such keyword {i}" for i in range(RARE)])
    assert statistics.pstdev(present) > 5 * 5  # the noise dwarfs the group's true 5
    assert set(absent) == {0}


def _query_rows(client, key, body):
    return post_query(client, key, body).json["results"]


def test_one_meaning_one_noise_on_query(client, key, demo_store):
    """/query: values matching nothing, every platform, the countries holding the filtered cities,
    order and duplicates all leave the cell, and its noise, as it was."""
    cities = get(client, "/geo-heat", key, {"window": "7d", "level": "city"}).json["regions"]
    town, other = cities[len(cities) // 2]["geo_key"], cities[0]["geo_key"]
    frame = demo_store.snapshot().suppressions
    countries = frame.filter(pl.col("city").is_in([town, other])).get_column("country").cast(pl.String).unique().to_list()
    platforms = frame.get_column("platform").cast(pl.String).unique().to_list()
    for group_by, extra in ((["time"], {"bucket": "day"}), ([], {}), (["platform"], {})):
        def rows(filters, group_by=group_by, extra=extra):
            return _query_rows(client, key, {"window": "7d", "filters": filters, "group_by": group_by, **extra})
        plain = rows({"cities": [town, other]})
        assert any(r["suppressions"] for r in plain)
        for phrasing in (
            {"cities": [other, "zz1", town, town]},
            {"cities": [town, other, "zz2"], "countries": [*countries, "ZZ"]},
            {"cities": [town, other], "platforms": [*platforms, "other"]},
        ):
            assert rows(phrasing) == plain, (group_by, phrasing)
    # A real narrowing is another cell: one city alone is not the pair.
    assert _query_rows(client, key, {"window": "7d", "filters": {"cities": [town]}}) != \
        _query_rows(client, key, {"window": "7d", "filters": {"cities": [town, other]}})


def test_one_meaning_one_noise_across_endpoints(client, key, demo_store):
    """Each endpoint's cell is the /query cell of the same meaning, however the /query is padded."""
    frame = demo_store.snapshot().suppressions
    platforms = frame.get_column("platform").cast(pl.String).unique().to_list()
    word = top(client, key, limit=1)[0]["keyword_raw"]
    series = get(client, "/keyword-timeseries", key, {"keyword": word, "window": "7d", "bucket": "day"}).json["timeseries"]
    padded = _query_rows(client, key, {"window": "7d", "group_by": ["time"], "bucket": "day",
                                       "filters": {"keywords": [word, "no such keyword"], "platforms": platforms}})
    by_day = {r["ts"]: r for r in padded}
    shown = [b for b in series if b["suppressions"]]
    assert shown
    for bucket in shown:
        assert (by_day[bucket["ts"]]["suppressions"], by_day[bucket["ts"]]["unique_users"]) == \
            (bucket["suppressions"], bucket["users_est"])
    for level, plural, junk in (("city", "cities", "zz9"), ("country", "countries", "ZZ")):
        for unit in get(client, "/geo-heat", key, {"window": "30d", "level": level}).json["regions"][:3]:
            alone = _query_rows(client, key, {"window": "30d", "filters": {plural: [unit["geo_key"], junk, unit["geo_key"]],
                                                                            "platforms": platforms}})[0]
            assert (alone["suppressions"], alone["unique_users"]) == (unit["suppressions"], unit["unique_users"])
    listed = top(client, key, limit=5)
    for record in listed:
        alone = _query_rows(client, key, {"window": "7d", "filters": {"keywords": [record["keyword_raw"], "zz"],
                                                                       "platforms": platforms}})[0]
        assert alone["suppressions"] == record["suppressions"]


def test_invariants_hold_on_noisy_numbers(client, key):
    for kind in ("all", "added", "removed", "edited"):
        records = get(client, "/keyword-activity", key, {"window": "7d", "type": kind, "limit": "500"}).json["keywords"]
        assert records
        for r in records:
            assert r["net_adds"] == r["adds"] - r["removes"]
            assert r["total_events"] == r["adds"] + r["removes"] + r["edits"]
    ranks = top(client, key, limit=100)
    assert [r["rank"] for r in ranks] == list(range(1, len(ranks) + 1))
    assert [r["suppressions"] for r in ranks] == sorted((r["suppressions"] for r in ranks), reverse=True)
    for record in get(client, "/trending", key, {"window": "7d"}).json["trending"]:
        r, b = record["recent"], record["baseline"]
        assert record["growth_pct"] == round(100 * (r / 24 - b / 144) / (b / 144), 2)


def test_no_negative_number_anywhere(client, key):
    answers = [
        get(client, "/top-keywords", key, {"window": "30d", "limit": "500"}).json["keywords"],
        get(client, "/keyword-timeseries", key, {"keyword": "rare keyword 1", "window": "7d"}).json["timeseries"],
        get(client, "/domain-timeseries", key, {"domain": "reddit.com", "window": "30d"}).json["timeseries"],
        *(get(client, "/geo-heat", key, {"window": "30d", "level": level}).json["regions"]
          for level in ("country", "region", "county", "city")),
        get(client, "/trending", key, {"window": "30d", "min_baseline": "0", "limit": "500"}).json["trending"],
        get(client, "/keyword-activity", key, {"window": "30d", "limit": "500"}).json["keywords"],
        post_query(client, key, {"window": "30d", "group_by": ["keyword", "platform"], "limit": 1000}).json["results"],
    ]
    for records in answers:
        for record in records:
            for field, value in record.items():
                if isinstance(value, int) and field not in ("net_adds",):
                    assert value >= 0, (field, record)


def test_new_data_redraws_noise_only_for_the_cells_it_touches(tmp_path, demo_dir, accounts, key):
    import shutil

    data_dir = tmp_path / "data"
    shutil.copytree(demo_dir, data_dir)
    client = make_client(data_dir, EventStore(data_dir, check_interval=0), accounts)
    word = top(client, key, limit=1)[0]["keyword_raw"]
    before_series = get(client, "/keyword-timeseries", key, {"keyword": word, "window": "7d", "bucket": "day"}).json
    before_top = {k["keyword_raw"]: k["suppressions"] for k in top(client, key)}

    # Late rows for another keyword, on the last day: the true value of `word` does not change.
    late_day = DEMO_END - dt.timedelta(hours=2)
    one = pl.read_parquet(next((data_dir / "suppressions").rglob("*.parquet"))).head(1)
    write_events(data_dir, "suppressions", one.with_columns(
        pl.lit("a late keyword").alias("keyword"), pl.lit(late_day).dt.cast_time_unit("us").alias("ts")))

    after_series = get(client, "/keyword-timeseries", key, {"keyword": word, "window": "7d", "bucket": "day"}).json
    after_top = {k["keyword_raw"]: k["suppressions"] for k in top(client, key)}
    late_bucket = late_day.strftime("%Y-%m-%dT00:00:00Z")
    for old, new in zip(before_series["timeseries"], after_series["timeseries"], strict=True):
        if old["ts"] != late_bucket:
            assert old == new, "a day without new data keeps its noise"
    # The 7d cells cover the late day: new noise (else the two answers would difference exactly).
    changed = sum(before_top[k] != after_top.get(k) for k in before_top)
    assert changed > len(before_top) * 0.8


def test_one_meaning_one_noise_with_compare_and_intervals(client, key):
    """The period before (compare) and the intervals are computed from the same canonical cells."""
    cities = get(client, "/geo-heat", key, {"window": "7d", "level": "city"}).json["regions"]
    pair = [cities[0]["geo_key"], cities[2]["geo_key"]]
    for extra in ({"compare": "previous_period"}, {"intervals": True}):
        plain = post_query(client, key, {"window": "7d", "filters": {"cities": pair}, "group_by": ["platform"], **extra})
        padded = post_query(client, key, {"window": "7d", "filters": {"cities": [*pair, "zz1"], "platforms": [
            "chrome", "firefox", "safari", "edge", "ios", "android", "other"]}, "group_by": ["platform"], **extra})
        assert plain.status_code == padded.status_code == 200
        assert plain.json["results"] and padded.json["results"] == plain.json["results"]
