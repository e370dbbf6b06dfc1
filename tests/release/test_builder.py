"""The schedule: every closed node released once, dense over the public domain, never drawn again."""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
from pathlib import Path

import polars as pl

from service.release import domains
from service.release.builder import release_through
from service.release.menu import BUDGET, TABLES_BY_NAME, USER_DAYS, sigma
from service.release.noise import release_key
from service.release.sources import FrameDays
from service.release.storage import ReleaseStore
from service.store.reader import EventStore
from tests.release.conftest import RELEASE_SECRET, released_copy
from tests.support.fixture_data import FIXTURE_AS_OF

HOUR = dt.timedelta(hours=1)


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted((root / "release").rglob("*.parquet")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def test_every_closed_node_is_released_and_the_state_says_through_when(released_dir: Path) -> None:
    store = ReleaseStore(released_dir)
    assert store.through() == FIXTURE_AS_OF
    keywords = store.read_table(TABLES_BY_NAME["keywords"])
    last_hour = keywords.filter(pl.col("level") == "hour").get_column("start").max()
    assert last_hour == FIXTURE_AS_OF - HOUR
    # The day before as_of is a dense day node: every keyword of the list, with or without events.
    day = keywords.filter((pl.col("level") == "day") & (pl.col("start") == FIXTURE_AS_OF.replace(hour=0) - 24 * HOUR))
    assert day.filter(pl.col("cell").is_not_null()).height == len(domains.values("keyword"))


def test_a_second_run_releases_nothing_and_changes_no_byte(released_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(released_dir, copy)
    before = _digest(copy)
    summary = release_through(ReleaseStore(copy), FrameDays(EventStore(copy).snapshot()),
                              release_key(RELEASE_SECRET), FIXTURE_AS_OF)
    assert summary.nodes == 0
    assert _digest(copy) == before


def test_the_same_secret_releases_the_same_numbers_another_one_others(fixture_data_dir: Path, released_dir: Path,
                                                                       tmp_path: Path) -> None:
    again = released_copy(fixture_data_dir, tmp_path / "again", days=3)
    other = released_copy(fixture_data_dir, tmp_path / "other", secret="another install's secret", days=3)
    table = TABLES_BY_NAME["cities"]
    since = FIXTURE_AS_OF.replace(hour=0) - dt.timedelta(days=3)
    mine = ReleaseStore(released_dir).read_table(table).filter(pl.col("start") >= since)
    # A node's numbers do not depend on when the release started (its day before is released too).
    assert ReleaseStore(again).read_table(table).filter(pl.col("start") >= since + dt.timedelta(days=1)).equals(
        mine.filter(pl.col("start") >= since + dt.timedelta(days=1)))
    # Day nodes are dense over the domain whatever the secret (hot cells follow the noise).
    theirs = ReleaseStore(other).read_table(table).filter(pl.col("level") == "day")
    mine = mine.filter(pl.col("level") == "day")
    assert theirs.select("level", "start", "cell").equals(mine.select("level", "start", "cell"))
    assert not theirs.get_column("suppressions").equals(mine.get_column("suppressions"))


def test_an_event_landing_after_its_hour_was_released_changes_no_released_value(released_dir: Path,
                                                                               tmp_path: Path) -> None:
    from service.store import ingest
    from tests.support.fixture_data import FIXTURE_NOW

    copy = tmp_path / "data"
    shutil.copytree(released_dir, copy)
    before = ReleaseStore(copy).read_table(TABLES_BY_NAME["keywords"])
    late = tmp_path / "late.csv"
    ts = (FIXTURE_AS_OF - 3 * HOUR).strftime("%Y-%m-%dT%H:%M:%SZ")
    late.write_text("ts,user_id,keyword,domain,platform,page_context,country,region,county,city,suppressions\n"
                    + "".join(f"{ts},late-{i},spoilers,reddit.com,chrome,feed,US,US-NY,36061,5128581,3\n"
                              for i in range(200)))
    ingest.ingest_files(copy, [late], secret=RELEASE_SECRET, now=FIXTURE_NOW, table="suppressions", progress=False)
    summary = release_through(ReleaseStore(copy), FrameDays(EventStore(copy).snapshot()),
                              release_key(RELEASE_SECRET), FIXTURE_AS_OF)
    assert summary.nodes == 0
    assert ReleaseStore(copy).read_table(TABLES_BY_NAME["keywords"]).equals(before)


def test_noise_sd_is_stored_beside_every_node(released_dir: Path) -> None:
    table = TABLES_BY_NAME["keywords"]
    frame = ReleaseStore(released_dir).read_table(table)
    days = frame.filter(pl.col("level") == "day")
    assert days.get_column("sigma_user_days").unique().to_list() == [sigma(table, table.measure(USER_DAYS), "day", BUDGET)]
    markers = frame.filter(pl.col("cell").is_null())
    assert markers.height == frame.select("level", "start").unique().height  # one marker a node
