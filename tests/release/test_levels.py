"""The time hierarchy: every window of whole hours is the disjoint union of its cover's nodes."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from service.release.levels import LEVELS, Node, closing_at, cover, nodes_of_day

UTC = dt.UTC
HOUR = dt.timedelta(hours=1)


def test_cover_partitions_any_window_exactly() -> None:
    rng = random.Random(7)
    base = dt.datetime(2026, 1, 1, tzinfo=UTC)
    for _ in range(300):
        start = base + rng.randrange(0, 24 * 200) * HOUR
        end = start + rng.choice([1, 6, 12, 24, 168, 720, 2160, rng.randrange(1, 3000)]) * HOUR
        nodes = cover(start, end)
        assert nodes[0].start == start and nodes[-1].end == end
        for before, after in zip(nodes, nodes[1:], strict=False):
            assert before.end == after.start  # contiguous, so disjoint and whole
        for node in nodes:
            assert LEVELS[node.level].start(node.start) == node.start  # aligned


def test_cover_uses_few_nodes_for_the_windows_asked() -> None:
    as_of = dt.datetime(2026, 12, 8, 14, tzinfo=UTC)
    sizes = {hours: len(cover(as_of - hours * HOUR, as_of)) for hours in (1, 24, 168, 720, 2160)}
    assert sizes[1] == 1
    assert sizes[24] <= 10 and sizes[168] <= 17 and sizes[720] <= 20 and sizes[2160] <= 30


def test_an_aligned_day_and_week_are_one_node() -> None:
    monday = dt.datetime(2026, 12, 7, tzinfo=UTC)
    assert cover(monday, monday + 24 * HOUR) == [Node(monday, "day")]
    assert cover(monday, monday + 168 * HOUR) == [Node(monday, "week")]


def test_nodes_close_with_their_last_hour() -> None:
    monday = dt.datetime(2026, 12, 7, tzinfo=UTC)
    closing = {n.level for n in closing_at(monday)}
    assert closing == {"hour", "quarter", "day", "week"}
    assert {n.level for n in closing_at(monday + 6 * HOUR)} == {"hour", "quarter"}
    assert {n.level for n in closing_at(monday + 7 * HOUR)} == {"hour"}
    assert len(nodes_of_day(monday.date())) == 24 + 4 + 1


def test_bounds_must_be_whole_aware_hours() -> None:
    start = dt.datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="whole hours"):
        cover(start + dt.timedelta(minutes=5), start + HOUR)
    with pytest.raises(ValueError, match="aware"):
        cover(start.replace(tzinfo=None), start + HOUR)
