"""Issue 22, part 5: a snapshot in segments. A landing after the last event writes one new
segment and hard-links the others; late rows merge only the segments they reach; a backfill into
the first segment, a code-width change or too many segments compact the table into one segment;
the reader concatenates mapped segments without copying; and answers do not depend on the (appended, unsorted) dictionary order."""

from __future__ import annotations

import datetime as dt
import gc
import os
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service.engine.polars import PolarsEngine as Engine
from service.engine.requests import (
    DomainTimeseries,
    FlexibleQuery,
    GeoHeat,
    KeywordActivity,
    KeywordTimeseries,
    TopKeywords,
    Trending,
)
from service.privacy import Privacy
from service.store import consolidate, encoding, layout, reader, schema, snapshot, snapshot_reading, writer
from tests.support import process_memory

UTC = dt.UTC
S, K = schema.SUPPRESSIONS, schema.KEYWORD_CHANGES


def _rows(keywords: list[str], day: int, *, hour: int = 0, per: int = 3, domains: tuple[str, ...] = ("mid.com",),
          countries: tuple[str, ...] = ("US",), users: int = 0) -> pl.DataFrame:
    rows = []
    for k, keyword in enumerate(keywords):
        for i in range(per):
            rows.append({
                "ts": dt.datetime(2026, 3, day, hour, 0, tzinfo=UTC) + dt.timedelta(minutes=k * per + i),
                "user_id": users + i, "keyword": keyword, "domain": domains[(k + i) % len(domains)],
                "platform": ["ios", "chrome"][i % 2], "page_context": "feed",
                "country": countries[(k + i) % len(countries)], "region": None, "county": None, "city": None,
                "suppressions": 1 + i % 2,
            })  # fmt: skip
    return pl.DataFrame(rows, schema=schema.SUPPRESSIONS_SCHEMA)


def _changes(keywords: list[str], day: int, *, hour: int = 0, per: int = 3) -> pl.DataFrame:
    rows = [
        {"ts": dt.datetime(2026, 3, day, hour, 0, tzinfo=UTC) + dt.timedelta(minutes=k * per + i),
         "user_id": 900 + i + 7 * k, "keyword": keyword, "action": ["add", "remove", "edit"][i % 3], "platform": "ios",
         "country": "US"}
        for k, keyword in enumerate(keywords) for i in range(per)
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=schema.KEYWORD_CHANGES_SCHEMA)


def _land(data: Path, suppressions: pl.DataFrame | None = None, changes: pl.DataFrame | None = None) -> None:
    frames = {}
    if suppressions is not None:
        frames[S] = suppressions
    if changes is not None:
        frames[K] = changes
    writer.write_tables(data, frames)


def _meta(data: Path) -> dict:
    return snapshot_reading.read_meta(snapshot.snapshot_dir(data, layout.read_generation(data)))


def _canonical(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    return frame.cast(schema.SCHEMAS[table]).sort(pl.all())


def _equals_partitions(data: Path) -> reader.EventFrames:
    generation = layout.read_generation(data)
    mapped = reader.load_frames(data, generation)
    parsed = reader.read_partitions(data, generation)
    for table in schema.TABLES:
        ours = getattr(mapped, table)
        assert ours.get_column("ts").flags["SORTED_ASC"]
        assert_frame_equal(_canonical(ours, table), _canonical(getattr(parsed, table), table))
    return mapped


def test_polars_code_widths_are_the_ones_the_writer_assumes() -> None:
    for values in (1, 255, 256, 65_535, 65_536):
        enum = pl.Enum([f"v{i}" for i in range(values)])
        assert pl.Series([], dtype=enum).to_physical().dtype == encoding.code_width(values), values


def test_appending_writes_one_segment_and_links_the_others(tmp_path: Path) -> None:
    _land(tmp_path, _rows(["m", "n"], 1), _changes(["m"], 1))
    first = snapshot.snapshot_dir(tmp_path, 1)
    inode = os.stat(first / snapshot.segment_name(S, 1)).st_ino
    _land(tmp_path, _rows(["a", "z"], 2))
    second = snapshot.snapshot_dir(tmp_path, 2)
    assert _meta(tmp_path)["segments"] == {S: [snapshot.segment_name(S, 1), snapshot.segment_name(S, 2)],
                                          K: [snapshot.segment_name(K, 1)]}
    assert os.stat(second / snapshot.segment_name(S, 1)).st_ino == inode  # the same file, not a copy
    assert not first.exists()  # the old snapshot's directory is deleted once 2 is published
    frames = _equals_partitions(tmp_path)
    assert frames.suppressions.schema["keyword"].categories.to_list() == ["m", "n", "a", "z"]
    assert frames.suppressions.get_column("keyword").n_chunks() == 2
    # The older segment's file carries the dictionary it was written with (a prefix of the newest).
    old = snapshot_reading.map_segment(second / snapshot.segment_name(S, 1))
    assert snapshot_reading.dictionary(old, "keyword").to_list() == ["m", "n"]
    # A landing at the very time of the last event still appends.
    last = frames.suppressions.get_column("ts")[-1]
    at_last = _rows(["b"], 2).with_columns(pl.lit(last).alias("ts"))
    _land(tmp_path, at_last)
    assert len(_meta(tmp_path)["segments"][S]) == 3
    _equals_partitions(tmp_path)


def test_a_backfill_compacts_into_one_sorted_segment(tmp_path: Path) -> None:
    _land(tmp_path, _rows(["m", "n"], 1, hour=6))
    _land(tmp_path, _rows(["z", "a"], 3))
    _land(tmp_path, _rows(["b"], 1))  # before the end of the first segment
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 3)]
    frames = _equals_partitions(tmp_path)
    assert frames.suppressions.schema["keyword"].categories.to_list() == ["a", "b", "m", "n", "z"]
    assert frames.suppressions.get_column("keyword").n_chunks() == 1


def test_late_rows_merge_only_the_segments_they_reach(tmp_path: Path) -> None:
    _land(tmp_path, _rows(["m", "n"], 1), _changes(["m"], 1))
    _land(tmp_path, _rows(["z", "a"], 3))
    _land(tmp_path, _rows(["y"], 5))
    first = snapshot.snapshot_dir(tmp_path, 3) / snapshot.segment_name(S, 1)
    inode = os.stat(first).st_ino
    # Late rows: after day 1's rows, before the end of day 3's and day 5's segments.
    _land(tmp_path, _rows(["b", "n"], 2))
    directory = snapshot.snapshot_dir(tmp_path, 4)
    assert _meta(tmp_path)["segments"] == {S: [snapshot.segment_name(S, 1), snapshot.segment_name(S, 4)],
                                          K: [snapshot.segment_name(K, 1)]}
    assert os.stat(directory / snapshot.segment_name(S, 1)).st_ino == inode  # day 1's segment linked, not rewritten
    frames = _equals_partitions(tmp_path)
    # The dictionaries stay append-only: the new value after the old ones, codes unchanged.
    assert frames.suppressions.schema["keyword"].categories.to_list() == ["m", "n", "a", "z", "y", "b"]
    assert frames.suppressions.get_column("keyword").n_chunks() == 2
    merged = snapshot_reading.map_segment(directory / snapshot.segment_name(S, 4))
    assert merged.num_rows == 3 * 2 + 3 + 3 * 2  # day 3's, day 5's and the late rows
    # Rows at the very end of a segment reach only the segments after it.
    end_of_day_1 = frames.suppressions.get_column("ts")[5]
    _land(tmp_path, _rows(["c"], 1).with_columns(pl.lit(end_of_day_1).alias("ts")))
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 1), snapshot.segment_name(S, 5)]
    _equals_partitions(tmp_path)


def test_a_tail_merge_that_would_widen_codes_compacts(tmp_path: Path) -> None:
    _land(tmp_path, _rows([f"k{i:03d}" for i in range(250)], 1, per=1))
    _land(tmp_path, _rows([f"k{i:03d}" for i in range(250, 255)], 3, per=1))
    _land(tmp_path, _rows(["x256"], 2, per=1))  # late, and the 256th value: UInt16 codes
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 3)]
    frames = _equals_partitions(tmp_path)
    assert frames.suppressions.get_column("keyword").to_physical().dtype == pl.UInt16


def test_a_wider_code_compacts(tmp_path: Path) -> None:
    _land(tmp_path, _rows([f"k{i:03d}" for i in range(250)], 1, per=1))
    _land(tmp_path, _rows([f"k{i:03d}" for i in range(250, 255)], 2, per=1))  # 255 values: still UInt8
    assert len(_meta(tmp_path)["segments"][S]) == 2
    _land(tmp_path, _rows(["x256"], 3, per=1))  # the 256th value: UInt16 codes
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 3)]
    frames = _equals_partitions(tmp_path)
    assert frames.suppressions.get_column("keyword").to_physical().dtype == pl.UInt16
    assert frames.suppressions.schema["keyword"].categories.is_sorted()


def test_the_segment_bound_compacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "MAX_SEGMENTS", 3)
    for day in range(1, 4):
        _land(tmp_path, _rows([f"d{day}"], day))
    assert len(_meta(tmp_path)["segments"][S]) == 3
    _land(tmp_path, _rows(["d4"], 4))
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 4)]
    _land(tmp_path, _rows(["d5"], 5))
    assert len(_meta(tmp_path)["segments"][S]) == 2
    _equals_partitions(tmp_path)


def test_at_the_segment_bound_late_rows_still_merge_only_the_tail(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "MAX_SEGMENTS", 3)
    for day in (1, 3, 5):
        _land(tmp_path, _rows([f"d{day}"], day))
    _land(tmp_path, _rows(["late"], 4))  # reaches only the last segment: no segment added
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 1), snapshot.segment_name(S, 2),
                                              snapshot.segment_name(S, 4)]
    _equals_partitions(tmp_path)
    _land(tmp_path, _rows(["d6"], 6))  # an append at the bound compacts
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 5)]
    _equals_partitions(tmp_path)


def test_the_plan_says_why_it_compacts(tmp_path: Path) -> None:
    _land(tmp_path, _rows(["m"], 2))
    previous = snapshot.snapshot_dir(tmp_path, 1)
    names = snapshot_reading.segment_names(_meta(tmp_path), S)
    assert consolidate.plan_table(previous, names, _rows(["a"], 3), S).action == consolidate.APPEND
    assert "backfill" in consolidate.plan_table(previous, names, _rows(["a"], 1), S).reason
    _land(tmp_path, _rows(["n"], 4))
    previous = snapshot.snapshot_dir(tmp_path, 2)
    names = snapshot_reading.segment_names(_meta(tmp_path), S)
    late = consolidate.plan_table(previous, names, _rows(["a"], 3), S)
    assert late.action == consolidate.TAIL and late.linked == tuple(names[:1]) and late.merged == tuple(names[1:])
    assert "1 of 2 segments" in late.reason
    assert consolidate.plan_table(previous, names, None, S).action == consolidate.LINK


def test_segments_are_concatenated_without_copying(tmp_path: Path) -> None:
    base = pl.concat([_rows([f"k{i}" for i in range(40)], 1, per=75)] * 100)  # 300,000 rows a landing
    start = dt.datetime(2026, 1, 1, tzinfo=UTC)
    for day in range(4):  # 300,000 seconds: a little under 4 days a landing
        seconds = pl.int_range(0, base.height, eager=True) + day * 400_000
        _land(tmp_path, base.with_columns((pl.lit(start) + pl.duration(seconds=seconds)).alias("ts")))
    directory = snapshot.snapshot_dir(tmp_path, 4)
    assert len(_meta(tmp_path)["segments"][S]) == 4
    size = sum((directory / name).stat().st_size for name in _meta(tmp_path)["segments"][S])
    # What any load costs the process once (its code paths' first use) is paid on a small store
    # of its own first, so it is not counted below; a copy of these rows could not reuse its memory.
    _land(tmp_path / "warm", _rows(["a", "b"], 1))
    reader.EventStore(tmp_path / "warm").snapshot().suppressions.select(pl.all().to_physical().sum())
    gc.collect()
    before = process_memory.usage(os.getpid())
    frames = reader.EventStore(tmp_path).snapshot()
    assert frames.suppressions.height == 1_200_000 and frames.suppressions.get_column("ts").n_chunks() == 4
    checksum = frames.suppressions.select(pl.all().to_physical().sum())  # touches every column, no temporaries
    assert checksum.height == 1
    after = process_memory.usage(os.getpid(), under=snapshot.snapshots_dir(tmp_path))
    assert after.mapped_rss > 0.9 * size  # read from the mapped files ...
    assert after.anonymous - before.anonymous < size / 3  # ... not copied into private memory


def test_a_following_store_maps_only_the_new_segment(tmp_path: Path) -> None:
    _land(tmp_path, _rows(["m", "n"], 1), _changes(["m"], 1))
    cache = snapshot_reading.SegmentCache()
    cache.begin()
    first = reader.load_frames(tmp_path, 1, cache)
    cache.keep_used()
    held = dict(cache._tables)
    platform = cache._columns[(*snapshot_reading.SegmentCache().open(
        snapshot.snapshot_dir(tmp_path, 1) / snapshot.segment_name(S, 1))[0], "platform")][1]
    assert platform.len() == first.suppressions.height
    _land(tmp_path, _rows(["a"], 2))  # keyword grows, platform does not
    cache.begin()
    second = reader.load_frames(tmp_path, 2, cache)
    cache.keep_used()
    assert cache.held == 3  # two suppressions segments, one keyword_changes segment
    assert all(cache._tables[key] is table for key, table in held.items())  # mapped once, reused
    # A column whose dictionary did not change is the very same labelled column.
    key = snapshot_reading.SegmentCache().open(snapshot.snapshot_dir(tmp_path, 2) / snapshot.segment_name(S, 1))[0]
    assert cache._columns[(*key, "platform")][1] is platform
    assert cache._columns[(*key, "keyword")][0].to_list() == ["m", "n", "a"]  # relabelled: the dictionary grew
    assert_frame_equal(_canonical(second.suppressions, S),
                       _canonical(reader.read_partitions(tmp_path, 2).suppressions, S))
    _land(tmp_path, _rows(["b"], 1))  # a backfill: suppressions compacted, its old segments let go
    cache.begin()
    reader.load_frames(tmp_path, 3, cache)
    cache.keep_used()
    changes = snapshot_reading.SegmentCache().open(snapshot.snapshot_dir(tmp_path, 3) / snapshot.segment_name(K, 1))[0]
    assert cache.held == 2 and set(held) & set(cache._tables) == {changes}  # keyword_changes: linked again


# ---------------------------------------------------------------------------------------------
# Answers do not depend on the dictionary's order


AS_OF = dt.datetime(2026, 3, 8, 0, tzinfo=UTC)


def _segmented_store(data: Path) -> None:
    """Three landings in time order whose new values come in an order that is not string order:
    keyword m, n, then a, z, then b (every keyword again in the last day, for trending); each
    keyword with the same counts, so that orderings meet ties."""
    _land(data, _rows(["m", "n"], 1, per=30, domains=("mid.com", "nn.org"), countries=("US", "FR")),
          _changes(["m", "n"], 1, per=30))
    _land(data, _rows(["z", "a", "m", "n"], 3, per=30, domains=("zz.com", "aa.com"), countries=("US", "DE", "AT")),
          _changes(["z", "a"], 3, per=30))
    _land(data, _rows(["z", "a", "m", "n", "b"], 7, hour=6, per=60, domains=("bb.com", "zz.com", "aa.com", "mid.com"),
                      countries=("BE", "US", "FR"), users=100), _changes(["b", "z", "a", "m"], 7, hour=6, per=30))


REQUESTS = [
    ("top_keywords", TopKeywords(window="7d", limit=100)),
    ("top_keywords", TopKeywords(window="7d", limit=2)),
    ("keyword_timeseries", KeywordTimeseries(keyword="a", window="7d", bucket="day")),
    ("domain_timeseries", DomainTimeseries(domain="zz.com", window="7d", bucket="day")),
    ("geo_heat", GeoHeat(window="7d", level="country")),
    ("trending", Trending(window="7d", dimension="keyword", metric="suppressions", limit=10, min_baseline=0)),
    ("trending", Trending(window="7d", dimension="domain", metric="unique_users", limit=10, min_baseline=0)),
    ("keyword_activity", KeywordActivity(window="7d", type="all", limit=100)),
    ("keyword_activity", KeywordActivity(window="7d", type="added", limit=2)),
    *[("query", FlexibleQuery(window="7d", filters=filters, group_by=group_by, bucket=bucket, order_by=order_by,
                              order=order, limit=limit))
      for filters, group_by, bucket in [({}, ("keyword",), None), ({}, ("domain", "platform"), None),
                                        ({}, ("country",), None), ({}, ("keyword", "time"), "day"),
                                        ({"keywords": ("a", "m", "b")}, ("keyword", "country"), None)]
      for order_by, order, limit in [("suppressions", "desc", 100), ("events", "asc", 3), ("unique_users", "desc", 2)]],
    # With the previous period and intervals (joins on the dimension values).
    ("top_keywords", TopKeywords(window="7d", limit=3, compare="previous_period", intervals=True)),
    ("geo_heat", GeoHeat(window="7d", level="country", compare="previous_period", intervals=True)),
    ("keyword_activity", KeywordActivity(window="7d", type="all", limit=3, compare="previous_period")),
    ("query", FlexibleQuery(window="7d", filters={}, group_by=("keyword", "domain"), bucket=None, limit=4,
                            compare="previous_period", intervals=True)),
]


@pytest.mark.parametrize("privacy", ["exact", "noisy"])
def test_answers_equal_a_fresh_build_with_sorted_values(tmp_path: Path, privacy: str) -> None:
    _segmented_store(tmp_path)
    segmented = reader.load_frames(tmp_path, 3)
    assert not segmented.suppressions.schema["keyword"].categories.is_sorted()  # the case under test
    assert not segmented.suppressions.schema["domain"].categories.is_sorted()
    assert not segmented.keyword_changes.schema["keyword"].categories.is_sorted()
    assert segmented.suppressions.get_column("ts").n_chunks() == 3
    fresh = reader.read_partitions(tmp_path, 3)  # sorted dictionaries, one chunk
    assert fresh.suppressions.schema["keyword"].categories.is_sorted()
    engine = Engine(Privacy.exact() if privacy == "exact" else Privacy("segments", None), trending_confidence=0)
    empty = []
    for method, request in REQUESTS:
        ours = getattr(engine, method)(segmented, AS_OF, request)
        theirs = getattr(engine, method)(fresh, AS_OF, request)
        assert_frame_equal(ours, theirs), (method, request)
        if not ours.height:
            empty.append((method, request))
    assert not empty  # every request compared something


@pytest.mark.parametrize("stop_at", ["compacting", "snapshot", "linking"])
def test_a_tail_merge_stopped_part_way_leaves_the_generation_and_lands_again(tmp_path: Path, stop_at: str) -> None:
    """Stopped before the tail is read, before its segment is written, and after it but before the
    earlier segments are linked."""
    _land(tmp_path, _rows(["m", "n"], 1))
    _land(tmp_path, _rows(["z", "a"], 3))
    before = _equals_partitions(tmp_path)

    seen: list[str] = []

    def stop_while_merging(stage: str, _done: int, _total: int) -> None:
        seen.append(stage)
        if stage == stop_at and "compacting" in seen:  # within the snapshot step of the tail merge
            raise KeyboardInterrupt  # as a kill would: the landing stops between its steps

    with pytest.raises(KeyboardInterrupt):
        writer.write_tables(tmp_path, {S: _rows(["b"], 2)}, on_stage=stop_while_merging)
    assert seen[-1] == stop_at
    assert layout.read_generation(tmp_path) == 2
    assert_frame_equal(reader.load_frames(tmp_path, 2).suppressions, before.suppressions)
    _land(tmp_path, _rows(["b"], 2))  # the next landing sweeps what was left and lands
    assert layout.read_generation(tmp_path) == 3
    assert _meta(tmp_path)["segments"][S] == [snapshot.segment_name(S, 1), snapshot.segment_name(S, 3)]
    assert _equals_partitions(tmp_path).suppressions.height == before.suppressions.height + 3
