"""The ClickHouse engine's contributions (engine/clickhouse/contributions.py, cells.py): per cell the
histogram of the users' totals above the smallest cap, computed in SQL, gives the same capped sums
as the polars engine's per-user rows for ANY caps at or above the smallest cap (the cap rule is the
privacy stage's and may change); trending's split of the period key matches `both_periods`; and
geo-heat's keyword count by hashes matches the count by strings."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.api.windows import TimeRange
from service.clickhouse.store import load_snapshot
from service.engine.clickhouse import dictionaries, keywords
from service.engine.clickhouse.cells import Query, cells
from service.engine.clickhouse.contributions import COLUMN, USERS, VALUE, HeavyTotals
from service.engine.clickhouse.keys import Key, dimension
from service.engine.measures import EVENTS, SUPPRESSIONS
from service.engine.polars.contributions import cell_contributions
from service.engine.polars.trending import both_periods
from service.engine.requests import FlexibleQuery, GeoHeat, KeywordActivity, TopKeywords, Trending
from service.privacy import Contributions, Privacy, PrivacyParams
from service.store import schema
from service.store.reader import build_frames
from tests.support import engines
from tests.support import fixture_data as fx

UTC = dt.UTC
START = dt.datetime(2026, 3, 2, 5, 17, tzinfo=UTC)
WINDOW = TimeRange(START, START + dt.timedelta(days=41))
PARAMS = PrivacyParams()


def events(n: int, seed: int) -> pl.DataFrame:
    """Suppression rows in the stored schema: a few heavy users (totals far above the smallest cap,
    some beyond any cap) among many light ones, over three keywords and two countries; and 30 users
    with the same total (12 rows of 1) in one cell, one histogram entry for all of them."""
    rng = random.Random(seed)
    base = fx.suppressions_frame().head(1)
    rows = []
    seconds = iter(rng.sample(range(40 * 86_400), n + 30 * 12))  # no two rows at the same time
    for _ in range(n):
        heavy = rng.random() < 0.4
        rows.append({
            "ts": START + dt.timedelta(seconds=next(seconds)),
            "user_id": rng.randrange(6) if heavy else rng.randrange(3_000),
            "keyword": rng.choice(["alpha", "beta", "gamma"]),
            "country": rng.choice(["US", "DE"]),
            "suppressions": rng.randrange(1, 60) if heavy else rng.randrange(1, 4),
        })
    rows += [{"ts": START + dt.timedelta(seconds=next(seconds)), "user_id": 10_000 + twin, "keyword": "alpha",
              "country": "US", "suppressions": 1} for twin in range(30) for _ in range(12)]
    n = len(rows)
    drawn = pl.DataFrame(rows, schema={"ts": pl.Datetime("us", "UTC"), "user_id": pl.UInt64, "keyword": pl.String,
                                       "country": pl.String, "suppressions": pl.Int32})
    others = base.drop(drawn.columns).select(pl.all().repeat_by(n).explode())
    stored = schema.SCHEMAS[schema.SUPPRESSIONS]
    return pl.concat([drawn, others], how="horizontal").select(pl.col(c).cast(t) for c, t in stored.items()).sort("ts")


@pytest.fixture(scope="module")
def landed(chdb_dir):
    frame = events(6_000, seed=11)
    frames = build_frames(frame, fx.keyword_changes_frame(), 1)
    return frames, engines.land(frames, chdb_dir)


def random_caps(cells_frame: pl.DataFrame, keys: list[str], seed: int) -> pl.DataFrame:
    """Any caps from the smallest one up (most near the totals, some above every total)."""
    rng = random.Random(seed)
    smallest = PARAMS.smallest_cap()
    pick = lambda: rng.choice([smallest, smallest + 1, rng.randrange(smallest, 400), 10**9])  # noqa: E731
    return cells_frame.select(keys).with_columns(
        pl.Series(f"{m}_cap", [pick() for _ in range(cells_frame.height)], dtype=pl.Int64)
        for m in (SUPPRESSIONS, EVENTS))


@pytest.mark.parametrize("keys", [["keyword"], ["keyword", "country"], []])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_capped_sums_from_sql_histograms_equal_the_per_user_ones(landed, keys: list[str], seed: int) -> None:
    frames, snapshot = landed
    rows = frames.suppressions.filter(pl.col("ts") < WINDOW.end)
    theirs_cells, theirs = cell_contributions(rows.lazy(), keys, PARAMS)
    ours_cells, ours = cells(snapshot, Query(schema.SUPPRESSIONS, [dimension(k) for k in keys], WINDOW), PARAMS)
    assert isinstance(ours, HeavyTotals)
    names = list(ours.keys)
    caps = random_caps(ours_cells, names, seed)
    got = ours.capped_sums(caps, [SUPPRESSIONS, EVENTS]).sort(names)
    if keys:
        expected = theirs.capped_sums(caps.with_columns(pl.col(k).cast(pl.String) for k in keys),
                                      [SUPPRESSIONS, EVENTS]).sort(names)
    else:  # one cell: the polars side keeps every user and no key
        expected = theirs.capped_sums(caps.drop(names), [SUPPRESSIONS, EVENTS])
        got = got.drop(names)
    assert_frame_equal(got, expected, check_dtypes=False)
    assert ours_cells.height == theirs_cells.height
    # What crossed the wire: one entry per (cell, column, distinct total above the smallest cap),
    # fewer than the users behind them.
    assert ours.heavy.filter(pl.col(VALUE) <= PARAMS.smallest_cap()).is_empty()
    for m in (SUPPRESSIONS, EVENTS):
        entries = ours.heavy.filter(pl.col(COLUMN) == m)
        assert entries.get_column(USERS).sum() == theirs.per_user.filter(pl.col(m) > PARAMS.smallest_cap()).height
        assert 0 < entries.height < entries.get_column(USERS).sum()
    assert (ours.heavy.get_column(USERS) >= 1).all()


def test_split_periods_equal_both_periods(landed) -> None:
    """Trending asks for both periods in one query (a period key); the split gives the same capped
    sums as the polars engine's two periods joined (`trending.both_periods`)."""
    frames, snapshot = landed
    middle = START + dt.timedelta(days=20)
    period = dimension("keyword"), Key("_recent", f"ts >= toDateTime64('{middle:%Y-%m-%d %H:%M:%S}', 6, 'UTC')",
                                       string=False)
    _, both = cells(snapshot, Query(schema.SUPPRESSIONS, list(period), WINDOW), PARAMS)
    assert isinstance(both, HeavyTotals)
    ours = both.split("_recent", {"recent": 1, "baseline": 0}, SUPPRESSIONS)
    rows = frames.suppressions.filter(pl.col("ts") < WINDOW.end)
    parts = []
    for name, part in (("recent", rows.filter(pl.col("ts") >= middle)), ("baseline", rows.filter(pl.col("ts") < middle))):
        _, contributions = cell_contributions(part.lazy(), ["keyword"], PARAMS)
        assert contributions.totals is not None
        parts.append(Contributions(contributions.per_user.select("keyword", pl.col(SUPPRESSIONS).alias(name)),
                                   ("keyword",), contributions.totals.select("keyword", pl.col(SUPPRESSIONS).alias(name))))
    theirs = both_periods(parts[0], parts[1])
    assert theirs is not None
    for seed in range(3):
        rng = random.Random(seed)
        caps = pl.DataFrame({"keyword": ["alpha", "beta", "gamma"]}).with_columns(
            pl.Series(f"{name}_cap", [rng.randrange(PARAMS.smallest_cap(), 300) for _ in range(3)])
            for name in ("recent", "baseline"))
        assert_frame_equal(ours.capped_sums(caps, ["recent", "baseline"]),
                           theirs.capped_sums(caps.with_columns(pl.col("keyword").cast(pl.String)), ["recent", "baseline"]),
                           check_dtypes=False)
    assert set(ours.heavy.get_column(COLUMN).unique()) <= {"recent", "baseline"}


@pytest.mark.parametrize("first", [1, 7, 20])
def test_keyword_count_by_hashes_equals_the_count_by_strings(landed, monkeypatch, first: int) -> None:
    """The same keyword counts whether each user's first rows are kept as hashes (packed numbers)
    or sorted as (time, keyword) strings (the path taken where two keywords share a hash)."""
    frames, snapshot = landed
    privacy = Privacy("exact", dataclasses.replace(PrivacyParams.exact(), keyword_rows_per_user=first))
    engine = engines.ClickHouseEngine(privacy)
    as_of = START + dt.timedelta(days=40)
    by_hash = engine.geo_heat(snapshot, as_of, GeoHeat("30d", "country"))
    assert keywords.hashes_distinct(snapshot)
    monkeypatch.setattr(keywords, "hashes_distinct", lambda _snapshot: False)
    by_string = engine.geo_heat(snapshot, as_of, GeoHeat("30d", "country"))
    assert_frame_equal(by_hash, by_string)
    polars_engine = engines.PolarsEngine(privacy)
    assert_frame_equal(by_hash, polars_engine.geo_heat(frames, as_of, GeoHeat("30d", "country")))


@pytest.fixture(scope="module")
def fixture_snapshot(chdb_dir):
    frames = fx.fixture_frames()
    return frames, engines.land(frames, chdb_dir)


REQUESTS = [
    ("top_keywords", TopKeywords("30d", 50)),
    ("trending", Trending("7d", "keyword", "suppressions", 50, 0.0)),
    ("trending", Trending("24h", "keyword", "unique_users", 50, 0.0)),
    ("geo_heat", GeoHeat("30d", "county")),
    ("keyword_activity", KeywordActivity("30d", "all", 50)),
    ("query", FlexibleQuery("30d", {"countries": ("US", "DE")}, ("city", "platform"), None)),
    ("query", FlexibleQuery("30d", {}, ("keyword", "time"), "day")),
]


@pytest.mark.parametrize(("endpoint", "request_"), REQUESTS)
def test_grouping_by_hashes_answers_as_grouping_by_strings(fixture_snapshot, monkeypatch, endpoint, request_) -> None:
    """Dimensions grouped by their hashes (mapped back through the dictionaries) give the answers
    of grouping by the strings, which is what the engine does where two values share a hash."""
    frames, snapshot = fixture_snapshot
    engine = engines.ClickHouseEngine(Privacy.exact(), trending_confidence=0.0)
    by_hash = getattr(engine, endpoint)(snapshot, fx.FIXTURE_AS_OF, request_)
    assert dictionaries.values(snapshot, schema.SUPPRESSIONS, "keyword") is not None
    monkeypatch.setattr(dictionaries, "values", lambda *_args: None)
    by_string = getattr(engine, endpoint)(snapshot, fx.FIXTURE_AS_OF, request_)
    assert by_hash.height > 0
    assert_frame_equal(by_hash, by_string)


def test_a_dictionary_follows_new_generations_and_refuses_shared_hashes(chdb_dir) -> None:
    ch = engines.fresh_database(chdb_dir, "dict")
    rows = fx.suppressions_frame()
    first = rows.filter(pl.col("keyword") != "crypto")

    def landed(frame: pl.DataFrame, generation: int):
        ch.insert(schema.SUPPRESSIONS, frame.with_columns(pl.lit(generation, dtype=pl.UInt32).alias("generation")))
        ch.command(f"INSERT INTO landings VALUES ({generation}, 1, '', '[]', [])")
        return load_snapshot(ch, generation)

    one = dictionaries.values(landed(first, 1), schema.SUPPRESSIONS, "keyword")
    assert one is not None and "crypto" not in one.get_column(dictionaries.VALUE).to_list()
    assert set(one.get_column(dictionaries.VALUE)) == set(first.get_column("keyword"))
    two = dictionaries.values(landed(rows.filter(pl.col("keyword") == "crypto"), 2), schema.SUPPRESSIONS, "keyword")
    assert two is not None and set(two.get_column(dictionaries.VALUE)) == set(rows.get_column("keyword"))
    # Two values under one hash (a collision, forged): no dictionary, so the strings are grouped.
    key = (ch.url, ch.database, schema.SUPPRESSIONS, "keyword")
    forged = two.with_columns(pl.lit(7, dtype=pl.UInt64).alias(dictionaries.HASH))
    monkeypatch_known = dictionaries._known
    monkeypatch_known[key] = dictionaries._Known(2, forged)
    try:
        assert dictionaries.values(load_snapshot(ch, 2), schema.SUPPRESSIONS, "keyword") is None
    finally:
        del monkeypatch_known[key]
