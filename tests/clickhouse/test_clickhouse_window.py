"""A window's bound beyond which the snapshot has no row is not a condition on the rows
(cells.time_bounds): the same cells as with both conditions."""

from __future__ import annotations

import datetime as dt

import pytest
from polars.testing import assert_frame_equal

from service.api.windows import TimeRange
from service.engine.clickhouse import cells as cells_module
from service.engine.clickhouse.cells import Query, cells
from service.engine.clickhouse.keys import dimension, time_bucket
from service.privacy import PrivacyParams
from service.store import schema
from tests.support import engines
from tests.support import fixture_data as fx

SECOND = dt.timedelta(seconds=1)


@pytest.fixture(scope="module")
def snapshot(chdb_dir):
    return engines.land(fx.fixture_frames(), chdb_dir)


def test_a_bound_is_left_out_where_no_row_lies_beyond_it(snapshot) -> None:
    first, last = snapshot.first_event, snapshot.last_event
    assert first is not None and last is not None
    assert cells_module.time_bounds(snapshot, TimeRange(first, last + SECOND)) == []
    assert [b.split()[1] for b in cells_module.time_bounds(snapshot, TimeRange(first + SECOND, last + SECOND))] == [">="]
    assert [b.split()[1] for b in cells_module.time_bounds(snapshot, TimeRange(first, last))] == ["<"]  # end excluded
    assert len(cells_module.time_bounds(snapshot, TimeRange(first + SECOND, last))) == 2


@pytest.mark.parametrize("inside", [False, True])
def test_cells_without_the_bounds_equal_cells_with_them(snapshot, monkeypatch, inside: bool) -> None:
    first, last = snapshot.first_event, snapshot.last_event
    assert first is not None and last is not None
    window = TimeRange(first + SECOND, last) if inside else TimeRange(first, last + SECOND)
    query = Query(schema.SUPPRESSIONS, [dimension("keyword"), time_bucket("day")], window)
    found, _ = cells(snapshot, query, PrivacyParams())
    sent: list[str] = []
    frame = snapshot.ch.frame
    monkeypatch.setattr(snapshot.ch, "frame", lambda sql, *args: sent.append(sql) or frame(sql, *args))
    monkeypatch.setattr(cells_module, "time_bounds", lambda _snapshot, time_range: [cells_module.in_range(time_range)])
    bounded, _ = cells(snapshot, query, PrivacyParams())
    assert "ts >= " in sent[-1]
    assert found.height > 0
    order = ["keyword", "ts"]
    assert_frame_equal(found.sort(order), bounded.sort(order))
