"""Both engines release identical tables: the schedule reads a day of events from ClickHouse
(chdb) exactly as from the Parquet store, and bounds and draws in the same code."""

from __future__ import annotations

import shutil
from pathlib import Path

from service.release.builder import release_through
from service.release.menu import TABLES
from service.release.noise import release_key
from service.release.sources import ClickHouseDays
from service.release.storage import ReleaseStore
from service.store.reader import EventStore
from tests.release.conftest import RELEASE_SECRET, LastDays
from tests.support.engines import land
from tests.support.fixture_data import FIXTURE_AS_OF


class _LastClickHouseDays(ClickHouseDays):
    def __init__(self, snapshot, days: int) -> None:  # type: ignore[no-untyped-def]
        super().__init__(snapshot)
        self.days = days

    def first_day(self):  # type: ignore[no-untyped-def]
        return LastDays.first_day(self)  # type: ignore[arg-type]


def test_clickhouse_and_polars_release_the_same_tables(fixture_data_dir: Path, chdb_dir: Path, tmp_path: Path) -> None:
    polars_dir, clickhouse_dir = tmp_path / "polars", tmp_path / "clickhouse"
    shutil.copytree(fixture_data_dir, polars_dir)
    clickhouse_dir.mkdir()
    frames = EventStore(polars_dir).snapshot()
    key = release_key(RELEASE_SECRET)
    release_through(ReleaseStore(polars_dir), LastDays(frames, 8), key, FIXTURE_AS_OF)
    release_through(ReleaseStore(clickhouse_dir), _LastClickHouseDays(land(frames, chdb_dir), 8), key, FIXTURE_AS_OF)
    for table in TABLES:
        assert ReleaseStore(clickhouse_dir).read_table(table).equals(ReleaseStore(polars_dir).read_table(table)), table.name
    assert ReleaseStore(clickhouse_dir).read_scalars().sort("table", "measure", "days", "start").equals(
        ReleaseStore(polars_dir).read_scalars().sort("table", "measure", "days", "start"))
