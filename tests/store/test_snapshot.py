"""Issue 22: a generation's snapshot holds exactly what its Parquet partitions hold, is mapped (not
copied) by the reader, and survives being replaced under a reader that still holds it."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
import weakref
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.engine.polars import counts
from service.store import day_spans, layout, reader, schema, snapshot, snapshot_reading, writer
from tests.support import fixture_data as fx
from tests.support import process_memory
from tests.support.landing import write_events

UTC = dt.UTC


def _canonical(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    return frame.cast(schema.SCHEMAS[table]).sort(pl.all())


def _same_as_partitions(data_dir: Path) -> reader.EventFrames:
    """The mapped snapshot of the current generation equals a fresh read of its partitions:
    rows, order by ts, Enum dictionaries, versions and the cost index's spans."""
    generation = layout.read_generation(data_dir)
    mapped = reader.load_frames(data_dir, generation)
    assert mapped.spans is not None  # from the snapshot, not from the Parquet fallback
    parsed = reader.read_partitions(data_dir, generation)
    for table in schema.TABLES:
        ours, theirs = getattr(mapped, table), getattr(parsed, table)
        # The same Enum values: an appended segment's dictionary holds the new values after the
        # old ones (not in string order), a fresh read sorts them.
        assert _values(ours) == _values(theirs)
        assert ours.get_column("ts").is_sorted()
        assert ours.get_column("ts").flags["SORTED_ASC"]  # marked sorted across segments
        assert_frame_equal(_canonical(ours, table), _canonical(theirs, table))
    assert mapped.versions == parsed.versions
    assert mapped.last_event == parsed.last_event
    fresh = day_spans.day_spans(parsed.suppressions)
    for name in day_spans.NAMES:
        assert_frame_equal(mapped.spans[name].sort(pl.all()), fresh[name].sort(pl.all()), check_column_order=False)
    return mapped


def _values(frame: pl.DataFrame) -> dict[str, object]:
    """Each column's dtype, with an Enum's categories as a set (their order is the writer's)."""
    return {name: sorted(dtype.categories.to_list()) if isinstance(dtype, pl.Enum) else dtype
            for name, dtype in frame.schema.items()}


def _late(keyword: str, day: int, hour: int, rows: int = 3) -> pl.DataFrame:
    return pl.DataFrame(
        [{"ts": dt.datetime(2026, 3, day, hour, i, tzinfo=UTC), "user_id": 500 + i, "keyword": keyword,
          "domain": "new.example", "platform": "ios", "page_context": "feed", "country": "FR",
          "region": None, "county": None, "city": None, "suppressions": 1 + i} for i in range(rows)],
        schema=schema.SUPPRESSIONS_SCHEMA,
    )  # fmt: skip


def test_landings_build_on_the_previous_snapshot_and_equal_the_partitions(tmp_path: Path) -> None:
    writer.write_tables(tmp_path, {schema.SUPPRESSIONS: fx.suppressions_frame(),
                                   schema.KEYWORD_CHANGES: fx.keyword_changes_frame()})
    first = _same_as_partitions(tmp_path)
    # Rows after the last event (appended), with values that sort before and after existing ones.
    write_events(tmp_path, schema.SUPPRESSIONS, pl.concat([_late("aaa first", 11, 9), _late("zzz last", 11, 10)]))
    second = _same_as_partitions(tmp_path)
    keywords = second.suppressions.schema["keyword"].categories.to_list()
    assert keywords[-2:] == ["aaa first", "zzz last"]  # appended after the old values: a second segment
    assert second.suppressions.get_column("keyword").n_chunks() == 2
    # Rows among the existing ones: a backfill, compacted into one segment with sorted values.
    write_events(tmp_path, schema.SUPPRESSIONS, _late("middle", 9, 12))
    third = _same_as_partitions(tmp_path)
    assert third.suppressions.height == first.suppressions.height + 9
    assert third.suppressions.schema["keyword"].categories.is_sorted()
    assert third.suppressions.get_column("keyword").n_chunks() == 1
    # keyword_changes was not touched: the same file, linked.
    directories = snapshot.existing(tmp_path)
    assert set(directories) == {3}
    meta = snapshot_reading.read_meta(directories[3])
    assert meta["segments"] == {"suppressions": ["suppressions-g00000003.arrow"],
                                "keyword_changes": ["keyword_changes-g00000001.arrow"]}
    assert os.stat(directories[3] / "keyword_changes-g00000001.arrow").st_nlink == 1  # 1's and 2's are gone


def test_a_store_without_snapshot_gets_one_at_the_next_landing(tmp_path: Path) -> None:
    fx.write_fixture_store(tmp_path)  # partitions placed by hand, as before snapshots existed
    assert snapshot.existing(tmp_path) == {}
    assert reader.load_frames(tmp_path, 1).spans is None  # read from the partitions
    write_events(tmp_path, schema.SUPPRESSIONS, _late("later", 11, 9))
    assert set(snapshot.existing(tmp_path)) == {2}
    _same_as_partitions(tmp_path)


def test_the_reader_maps_the_snapshot(tmp_path: Path) -> None:
    big = pl.concat([fx.suppressions_frame()] * 4000)  # about 1.1M rows: pages worth counting
    writer.write_tables(tmp_path, {schema.SUPPRESSIONS: big, schema.KEYWORD_CHANGES: fx.keyword_changes_frame()})
    del big
    size = (snapshot.snapshot_dir(tmp_path, 1) / snapshot.segment_name("suppressions", 1)).stat().st_size
    before = process_memory.usage(os.getpid())
    frames = reader.EventStore(tmp_path).snapshot()
    checksum = frames.suppressions.select(pl.all().to_physical().cast(pl.Float64).sum())  # touches every column
    assert checksum.height == 1
    after = process_memory.usage(os.getpid(), under=snapshot.snapshots_dir(tmp_path))
    assert after.mapped_rss > 0.9 * size  # read from the mapped file ...
    assert after.anonymous - before.anonymous < size / 3  # ... not copied into private memory


def test_a_replaced_snapshot_stays_readable_by_who_holds_it(tmp_path: Path) -> None:
    writer.write_tables(tmp_path, {schema.SUPPRESSIONS: fx.suppressions_frame(),
                                   schema.KEYWORD_CHANGES: fx.keyword_changes_frame()})
    store = reader.EventStore(tmp_path, check_interval=0)
    held = store.snapshot()
    expected = _canonical(held.suppressions.clone(), schema.SUPPRESSIONS)
    write_events(tmp_path, schema.SUPPRESSIONS, _late("later", 11, 9))
    assert not snapshot.snapshot_dir(tmp_path, 1).exists()  # removed once generation 2 was published
    assert_frame_equal(_canonical(held.suppressions, schema.SUPPRESSIONS), expected)  # still mapped
    assert counts.index_for(held) is not None
    assert store.snapshot().generation == 2


def test_a_generation_whose_snapshot_went_away_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer.write_tables(tmp_path, {schema.SUPPRESSIONS: fx.suppressions_frame(),
                                   schema.KEYWORD_CHANGES: fx.keyword_changes_frame()})
    write_events(tmp_path, schema.SUPPRESSIONS, _late("later", 11, 9))
    # A reader that read GENERATION = 1 just before generation 2 was published and 1's snapshot removed:
    with pytest.raises(reader.GenerationMoved):
        reader.load_frames(tmp_path, 1)
    reads = iter([1, 2])
    real = layout.read_generation
    monkeypatch.setattr(reader.layout, "read_generation", lambda data_dir: next(reads, None) or real(data_dir))
    assert reader.EventStore(tmp_path).snapshot().generation == 2


def test_a_following_store_lets_go_of_a_replaced_generation_without_requests(tmp_path: Path) -> None:
    writer.write_tables(tmp_path, {schema.SUPPRESSIONS: fx.suppressions_frame(),
                                   schema.KEYWORD_CHANGES: fx.keyword_changes_frame()})
    store = reader.EventStore(tmp_path, check_interval=0.05)
    first = weakref.ref(store.snapshot())
    stop = threading.Event()
    follower = threading.Thread(target=store.follow, args=(stop,), daemon=True)
    follower.start()
    try:
        write_events(tmp_path, schema.SUPPRESSIONS, _late("later", 11, 9))
        deadline = time.monotonic() + 10
        while first() is not None:  # nothing but the follower asks the store for its snapshot
            assert time.monotonic() < deadline, "the replaced generation is still held"
            time.sleep(0.05)
    finally:
        stop.set()
        follower.join()
    assert store.snapshot().generation == 2
