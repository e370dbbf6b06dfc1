"""The lander (service/collector/lander.py): each event lands once, whatever was repeated or killed."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.collector import log as event_log
from service.collector.index import COMPACT_FROM, LandedIndex, index_dir
from service.collector.lander import land_once
from service.store import layout, schema
from service.store.reader import read_table
from service.store.target import ParquetTarget
from tests.support.collector_events import (
    HOUR,
    NOW,
    append,
    at_hour_start,
    keyword_change,
    land,
    land_at,
    many,
    stored_ids,
    suppression,
    ts,
)


def test_a_round_lands_both_tables_as_one_generation_and_empties_the_log(data_dir):
    append(data_dir, many(30))
    append(data_dir, [keyword_change("k1"), keyword_change("k2")])
    landed = land(data_dir)
    assert (landed.landed, landed.duplicates, landed.batches, landed.generation) == (32, 0, 2, 1)
    assert stored_ids(data_dir) == {"suppressions": 30, "keyword_changes": 2}
    assert event_log.batches(data_dir) == []
    stored = read_table(data_dir, schema.SUPPRESSIONS)
    assert stored.height == 30 and set(stored["keyword"].cast(pl.String).to_list()) == {f"kw{i}" for i in range(7)}
    assert land(data_dir).landed == 0 and layout.read_generation(data_dir) == 1  # nothing new: no generation


def test_the_same_events_appended_twice_land_once(data_dir):
    # A collector that appended and was killed before answering; the client sent the body again,
    # to a collector that did not know the ids: both copies are in the log.
    append(data_dir, many(20))
    append(data_dir, many(20))
    landed = land(data_dir)
    assert (landed.landed, landed.duplicates) == (20, 20)
    assert stored_ids(data_dir)["suppressions"] == 20


def test_an_event_sent_again_after_it_landed_is_dropped_as_a_duplicate(data_dir):
    append(data_dir, many(10))
    land(data_dir)
    append(data_dir, many(15))  # 10 old, 5 new
    landed = land(data_dir)
    assert (landed.landed, landed.duplicates) == (5, 10)
    assert stored_ids(data_dir)["suppressions"] == 15


def test_late_events_land_as_data_for_their_dates(data_dir):
    append(data_dir, [suppression("late", ts=ts(40)), suppression("now", ts=ts(1))])
    land(data_dir)
    days = {path.parent.name for path in layout.table_dir(data_dir, schema.SUPPRESSIONS).glob("date=*/*.parquet")}
    wanted = {f"date={(NOW - dt.timedelta(hours=h)).date().isoformat()}" for h in (40, 1)}
    assert days == wanted


def test_the_index_is_compacted_and_forgets_ids_too_old_to_come_back(data_dir):
    index = LandedIndex(data_dir).load()
    target = ParquetTarget(data_dir)
    for i in range(COMPACT_FROM):
        append(data_dir, [suppression(f"old{i}", ts=ts(47)), suppression(f"new{i}", ts=ts(1))])
        land_once(data_dir, target, index, now=NOW)
    assert len(list(index_dir(data_dir).glob("i*.parquet"))) == COMPACT_FROM
    later = NOW + dt.timedelta(hours=3)  # the "old" events are now 50 hours old: past 48 + 1
    assert index.compact(later, 48)
    assert len(list(index_dir(data_dir).glob("i*.parquet"))) == 1
    reloaded = LandedIndex(data_dir).load()
    assert sorted(reloaded.ids["event_id"].to_list()) == sorted(f"new{i}" for i in range(COMPACT_FROM))
    append(data_dir, [suppression("new0", ts=ts(1))])
    assert land_once(data_dir, target, reloaded, now=NOW).duplicates == 1


def test_a_batch_the_disk_damaged_is_set_aside_and_the_others_land(data_dir):
    append(data_dir, many(5, prefix="a"))
    damaged = append(data_dir, many(5, prefix="b"))
    append(data_dir, many(5, prefix="c"))
    damaged.path(data_dir).write_bytes(b"not an arrow file")
    landed = land(data_dir)
    assert landed.landed == 10 and stored_ids(data_dir)["suppressions"] == 10
    assert (event_log.events_dir(data_dir) / "damaged" / damaged.name).exists()
    assert event_log.batches(data_dir) == []


def test_the_running_hours_events_are_held_until_it_ends_then_land_once(data_dir):
    append(data_dir, [*at_hour_start(10, "run"), *many(5, prefix="past")])
    first = land_at(data_dir, NOW)
    assert (first.landed, first.held) == (5, 10)
    assert stored_ids(data_dir)["suppressions"] == 5 and event_log.batches(data_dir) == []
    assert [item.events for item in event_log.held(data_dir)] == [10]
    generation = layout.read_generation(data_dir)
    assert land_at(data_dir, NOW).landed == 0 and layout.read_generation(data_dir) == generation  # still held
    append(data_dir, at_hour_start(12, "run"))  # 10 repeats and 2 more, all held
    assert land_at(data_dir, NOW).held == 12
    ended = land_at(data_dir, HOUR + dt.timedelta(hours=1, seconds=1))
    assert (ended.landed, ended.duplicates) == (12, 10)
    assert stored_ids(data_dir)["suppressions"] == 17 and event_log.held(data_dir) == []
    assert not (event_log.held_dir(data_dir) / f"h{HOUR:%Y%m%dT%H}").exists()


def test_include_open_hour_lands_the_running_hour_at_once(data_dir):
    append(data_dir, at_hour_start(4, "run"))
    landed = land_at(data_dir, NOW, hold_open_hour=False)
    assert (landed.landed, landed.held) == (4, 0) and event_log.held(data_dir) == []


def test_held_events_are_kept_through_index_compaction(data_dir):
    append(data_dir, at_hour_start(3, "run"))
    target, index = ParquetTarget(data_dir), LandedIndex(data_dir).load()
    for i in range(COMPACT_FROM):
        append(data_dir, [suppression(f"old{i}")])
        land_once(data_dir, target, index, now=NOW)
    assert index.compact(NOW, 48)
    assert land_once(data_dir, target, LandedIndex(data_dir).load(), now=HOUR + dt.timedelta(hours=1)).landed == 3
