"""The event store reader: lazy load, exact schema, sort order, generation-following reloads."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.store import encoding, layout, reader, schema
from service.store.reader import EventStore
from tests.support import fixture_data as fx
from tests.support.landing import bump_generation

UTC = dt.UTC


def _check_served_schema(frame: pl.DataFrame, table: str) -> None:
    """Exactly the stored columns in order; dimensions as Enums over their sorted distinct values."""
    assert list(frame.columns) == list(schema.SCHEMAS[table])
    for column, dtype in schema.SCHEMAS[table].items():
        if column in schema.DIMENSIONS[table]:
            served = frame.schema[column]
            assert isinstance(served, pl.Enum), (column, served)
            values = frame.get_column(column).cast(pl.String).drop_nulls().unique().sort().to_list()
            assert served.categories.to_list() == values
        else:
            assert frame.schema[column] == dtype


def _as_stored(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """A served frame back in the stored schema, in a canonical row order (ts ties are unordered)."""
    return frame.cast(schema.SCHEMAS[table]).sort(pl.all())


def _extra_day(data_dir: Path) -> pl.DataFrame:
    """Land one more suppression event (a day after the fixture's last) without bumping."""
    extra = pl.DataFrame(
        [{
            "ts": dt.datetime(2026, 3, 11, 9, 0, tzinfo=UTC), "user_id": 99, "keyword": "late", "domain": "x.com",
            "platform": "ios", "page_context": "feed", "country": "DE", "region": None, "county": None,
            "city": None, "suppressions": 4,
        }],
        schema=schema.SUPPRESSIONS_SCHEMA,
    )
    fx.write_partitions(data_dir, schema.SUPPRESSIONS, extra, "part-extra.parquet")
    return extra


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    fx.write_fixture_store(tmp_path)
    return tmp_path


def test_constructor_reads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(reader, "load_frames", lambda *args: calls.append(args))
    store = EventStore(tmp_path / "does-not-exist-yet")
    assert not store.loaded
    assert calls == []


def test_empty_data_dir_gives_empty_tables_of_the_right_schema(tmp_path: Path) -> None:
    store = EventStore(tmp_path)
    frames = store.snapshot()
    assert store.loaded
    assert frames.generation == 0
    assert frames.last_event is None
    for table in schema.TABLES:
        frame = getattr(frames, table)
        assert frame.height == 0
        _check_served_schema(frame, table)
        assert_frame_equal(frame, encoding.encode(pl.DataFrame(schema=schema.SCHEMAS[table]), table))


def test_loads_every_partition_sorted_with_exact_schema(store_dir: Path) -> None:
    frames = EventStore(store_dir).snapshot()
    assert frames.generation == 1
    for table, frame, source in (
        (schema.SUPPRESSIONS, frames.suppressions, fx.suppressions_frame()),
        (schema.KEYWORD_CHANGES, frames.keyword_changes, fx.keyword_changes_frame()),
    ):
        _check_served_schema(frame, table)  # no `date` column, Enum dims
        assert frame.get_column("ts").is_sorted()
        assert frame.height == source.height
        assert_frame_equal(_as_stored(frame, table), source.sort(pl.all()))


def test_last_event_is_the_latest_ts_of_both_tables(store_dir: Path) -> None:
    frames = EventStore(store_dir).snapshot()
    # the latest keyword change (12:20) is later than the latest suppression (12:10)
    assert max(row["ts"] for row in fx.suppression_rows()) == dt.datetime(2026, 3, 10, 12, 10, tzinfo=UTC)
    assert frames.last_event == dt.datetime(2026, 3, 10, 12, 20, tzinfo=UTC)


def test_disk_and_in_memory_fixture_agree(store_dir: Path) -> None:
    loaded = EventStore(store_dir).snapshot()
    built = fx.fixture_frames()
    assert built.last_event == loaded.last_event
    for table in schema.TABLES:
        assert getattr(built, table).schema == getattr(loaded, table).schema
        assert_frame_equal(_as_stored(getattr(built, table), table), _as_stored(getattr(loaded, table), table))


def test_files_are_cast_to_the_stored_schema(tmp_path: Path) -> None:
    # A file with other physical types and an extra column, as another writer might produce.
    odd = fx.keyword_changes_frame().head(5).with_columns(
        pl.col("ts").dt.cast_time_unit("ns").dt.replace_time_zone(None),
        pl.col("user_id").cast(pl.Int64),
        pl.lit("2026-03-09").alias("date"),
    )
    target = layout.partition_dir(tmp_path, schema.KEYWORD_CHANGES, "2026-03-09")
    target.mkdir(parents=True)
    odd.write_parquet(target / "part-odd.parquet")
    (target / ".part-staging.parquet").write_bytes(b"not parquet: hidden files are not data")
    frames = EventStore(tmp_path).snapshot()
    _check_served_schema(frames.keyword_changes, schema.KEYWORD_CHANGES)
    assert_frame_equal(
        _as_stored(frames.keyword_changes, schema.KEYWORD_CHANGES),
        fx.keyword_changes_frame().head(5).sort(pl.all()),
    )


def test_reloads_when_the_generation_changes(store_dir: Path) -> None:
    store = EventStore(store_dir, check_interval=0)
    first = store.snapshot()
    assert store.snapshot() is first  # generation unchanged: same snapshot, nothing reread
    extra = _extra_day(store_dir)
    assert store.snapshot() is first  # landed but not yet published by a generation bump
    bump_generation(store_dir)
    second = store.snapshot()
    assert second is not first
    assert second.generation == 2
    assert second.suppressions.height == first.suppressions.height + 1
    assert second.last_event == extra.get_column("ts")[0]
    assert second.suppressions.get_column("ts").is_sorted()
    assert first.suppressions.height == len(fx.suppression_rows())  # old snapshot untouched


def test_generation_is_checked_at_most_every_check_interval(store_dir: Path) -> None:
    store = EventStore(store_dir, check_interval=0.3)
    first = store.snapshot()
    _extra_day(store_dir)
    bump_generation(store_dir)
    assert store.snapshot() is first
    time.sleep(0.35)
    assert store.snapshot().generation == 2


def test_long_check_interval_keeps_the_snapshot(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = EventStore(store_dir, check_interval=3600)
    first = store.snapshot()
    reads = []
    monkeypatch.setattr(reader.layout, "read_generation", lambda data_dir: reads.append(data_dir) or 99)
    for _ in range(5):
        assert store.snapshot() is first
    assert reads == []


def test_failed_reload_keeps_serving_the_last_snapshot(store_dir: Path) -> None:
    store = EventStore(store_dir, check_interval=0)
    first = store.snapshot()
    broken = layout.partition_dir(store_dir, schema.SUPPRESSIONS, "2026-03-11")
    broken.mkdir(parents=True)
    (broken / "part-broken.parquet").write_bytes(b"this is not a parquet file")
    bump_generation(store_dir)
    assert store.snapshot() is first
    (broken / "part-broken.parquet").unlink()
    _extra_day(store_dir)
    bump_generation(store_dir)
    assert store.snapshot().generation == 3


def test_first_load_happens_once_across_threads(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_load = reader.load_frames
    calls = []

    def slow_load(data_dir: Path, generation: int, *rest: object) -> reader.EventFrames:
        calls.append(generation)
        time.sleep(0.05)  # widen the window in which other threads arrive
        return real_load(data_dir, generation, *rest)

    monkeypatch.setattr(reader, "load_frames", slow_load)
    store = EventStore(store_dir, check_interval=0)
    results: list[reader.EventFrames] = []
    threads = [threading.Thread(target=lambda: results.append(store.snapshot())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1]
    assert len(results) == 8 and all(frames is results[0] for frames in results)


def test_other_threads_keep_the_old_snapshot_during_a_reload(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = EventStore(store_dir, check_interval=0)
    first = store.snapshot()
    real_load = reader.load_frames
    entered, release = threading.Event(), threading.Event()

    def blocking_load(data_dir: Path, generation: int, *rest: object) -> reader.EventFrames:
        entered.set()
        release.wait(5)
        return real_load(data_dir, generation, *rest)

    monkeypatch.setattr(reader, "load_frames", blocking_load)
    _extra_day(store_dir)
    bump_generation(store_dir)
    reloaded: list[reader.EventFrames] = []
    loader = threading.Thread(target=lambda: reloaded.append(store.snapshot()))
    loader.start()
    assert entered.wait(5)
    assert store.snapshot() is first  # not blocked behind the reload
    release.set()
    loader.join()
    assert reloaded[0].generation == 2
    assert store.snapshot() is reloaded[0]


def test_files_of_unpublished_generations_are_not_loaded(store_dir: Path) -> None:
    """A landing cut short (or still under way) leaves files named for GENERATION + 1: a worker
    that starts then must serve what its peers serve, not part of that landing."""
    extra = pl.DataFrame(
        [{"ts": dt.datetime(2026, 3, 9, 9, 0, tzinfo=UTC), "user_id": 7, "keyword": "half", "domain": "x.com",
          "platform": "ios", "page_context": "feed", "country": "DE", "region": None, "county": None,
          "city": None, "suppressions": 4}],
        schema=schema.SUPPRESSIONS_SCHEMA,
    )  # fmt: skip
    fx.write_partitions(store_dir, schema.SUPPRESSIONS, extra, layout.partition_file_name(2, "a" * 32))
    frames = EventStore(store_dir).snapshot()
    assert frames.generation == 1
    assert frames.suppressions.height == len(fx.suppression_rows())
    assert "half" not in frames.suppressions["keyword"].cast(pl.String).to_list()
    assert max(frames.versions[schema.SUPPRESSIONS].values()) <= 1  # noise keys ignore it too
    bump_generation(store_dir)  # published: now it is data
    frames = EventStore(store_dir).snapshot()
    assert frames.suppressions.height == len(fx.suppression_rows()) + 1
    assert frames.versions[schema.SUPPRESSIONS][dt.date(2026, 3, 9)] == 2
