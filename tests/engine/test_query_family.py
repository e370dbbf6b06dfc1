"""/query filtered on one place over more than a week: its cells' family (every place of the level,
docs/privacy.md "How it works", point 2) is computed beside the answer, once per snapshot and family
(`publication.query.family_cells`), and only where the answer does not hold it itself."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.api.windows import TimeRange
from service.engine.publication.query import family_cells, family_request
from service.engine.requests import FlexibleQuery

AS_OF = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
MONTH = TimeRange(AS_OF - dt.timedelta(days=30), AS_OF)
WEEK = TimeRange(AS_OF - dt.timedelta(days=7), AS_OF)


class Snapshot:
    """Stands for an engine's snapshot: compared by identity, as EventFrames and ClickHouseSnapshot."""


def test_the_family_request_drops_the_place_filter_and_groups_by_the_place():
    req = FlexibleQuery("30d", {"cities": ("a",), "platforms": ("chrome", "firefox")}, (), None, limit=5,
                        compare="previous_period", intervals=True)
    relaxed = family_request(req, MONTH)
    assert relaxed is not None
    assert (relaxed.filters, relaxed.group_by, relaxed.bucket) == ({"platforms": ("chrome", "firefox")}, ("city",), None)
    assert (relaxed.compare, relaxed.intervals) == (None, False)
    grouped = FlexibleQuery("30d", {"cities": ("a", "b")}, ("city",), None)
    assert family_request(grouped, MONTH).filters == {}


def test_no_family_request_where_the_answer_holds_its_family_or_has_none():
    for req, span in [
        (FlexibleQuery("30d", {}, ("city",), None), MONTH),                       # holds every city
        (FlexibleQuery("7d", {"cities": ("a",)}, (), None), WEEK),                # a week: no family
        (FlexibleQuery("30d", {"cities": ("a",)}, ("platform",), None), MONTH),   # two single values
        (FlexibleQuery("30d", {"keywords": ("k",)}, (), None), MONTH),            # not a place
        (FlexibleQuery("30d", {"cities": ("a", "b")}, (), None), MONTH),          # a set of places
    ]:
        assert family_request(req, span) is None


def test_the_family_is_computed_once_per_snapshot_and_family():
    asked: list[FlexibleQuery] = []

    def compute(relaxed: FlexibleQuery) -> pl.DataFrame:
        asked.append(relaxed)
        return pl.DataFrame({"city": ["a", "b", "c"], "suppressions_pilot": [10, 20, 30], "unique_users": [1, 2, 3]})

    one, other = Snapshot(), Snapshot()
    first = family_cells(one, FlexibleQuery("30d", {"cities": ("a",)}, (), None), MONTH, compute)
    assert first is not None and first.to_dicts() == [{"suppressions_pilot": 60, "unique_users": 6}]
    family_cells(one, FlexibleQuery("30d", {"cities": ("b",)}, (), None), MONTH, compute)   # the same family
    assert len(asked) == 1
    family_cells(one, FlexibleQuery("30d", {"cities": ("b",), "platforms": ("x", "y")}, (), None), MONTH, compute)
    later = TimeRange(MONTH.start + dt.timedelta(hours=1), MONTH.end + dt.timedelta(hours=1))
    family_cells(one, FlexibleQuery("30d", {"cities": ("b",)}, (), None), later, compute)
    family_cells(other, FlexibleQuery("30d", {"cities": ("a",)}, (), None), MONTH, compute)  # new data
    assert len(asked) == 4
    assert family_cells(one, FlexibleQuery("30d", {}, ("city",), None), MONTH, compute) is None
    assert len(asked) == 4


def test_requests_arriving_together_compute_their_family_once():
    """Forty one-place queries of one level and window at once (a sheet refreshing at the hour
    turn): one computes the family, the others wait for it and use it."""
    import threading
    import time

    calls: list[int] = []

    def compute(relaxed: FlexibleQuery) -> pl.DataFrame:
        calls.append(1)
        time.sleep(0.2)
        return pl.DataFrame({"city": ["a", "b"], "suppressions_pilot": [10, 20], "unique_users": [1, 2]})

    snapshot = Snapshot()
    found: list[pl.DataFrame | None] = []
    threads = [threading.Thread(target=lambda i=i: found.append(
        family_cells(snapshot, FlexibleQuery("30d", {"cities": (f"c{i}",)}, (), None), MONTH, compute)))
        for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert len(found) == 40 and all(f is not None and f.to_dicts() == [{"suppressions_pilot": 30, "unique_users": 3}]
                                    for f in found)
