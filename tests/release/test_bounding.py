"""Each user-day's part, bounded once: K first cells, greedy clips, user-days at the first hour."""

from __future__ import annotations

import datetime as dt

import polars as pl

from service.release.bounding import bounded_hours, kept_pairs
from service.release.menu import PLACE_TABLES, TABLES_BY_NAME
from service.store import schema

UTC = dt.UTC
DAY = dt.datetime(2026, 12, 7, tzinfo=UTC)


def _rows(events: list[tuple[int, int, str, int]], city: str = "5128581") -> pl.DataFrame:
    """(minute of the day, user, keyword, suppressions) -> suppression rows in New York."""
    return pl.DataFrame([{
        "ts": DAY + dt.timedelta(minutes=m), "user_id": u, "keyword": k, "domain": "reddit.com",
        "platform": "chrome", "page_context": "feed", "country": "US", "region": "US-NY", "county": "36061",
        "city": city, "suppressions": s} for m, u, k, s in events], schema=schema.SUPPRESSIONS_SCHEMA)


def test_a_user_day_counts_in_its_first_k_cells_only() -> None:
    keywords = TABLES_BY_NAME["keywords"]
    assert keywords.cells_per_user_day == 3
    rows = _rows([(0, 1, "spoilers", 1), (1, 1, "snakes", 1), (2, 1, "weather", 1), (3, 1, "crypto", 1),
                  (4, 1, "spoilers", 1)])
    out = bounded_hours(keywords, rows)
    assert set(out.get_column("cell")) == {"spoilers", "snakes", "weather"}  # crypto came fourth
    assert out.filter(pl.col("cell") == "spoilers").get_column("events").item() == 2


def test_sums_are_clipped_greedily_in_time_order() -> None:
    keywords = TABLES_BY_NAME["keywords"]
    clip = keywords.measure("suppressions").clip
    # 60 minutes apart: the first hour gets 6, the second what is left of the clip (4), the third 0.
    rows = _rows([(0, 1, "spoilers", 6), (60, 1, "spoilers", 6), (120, 1, "spoilers", 6)])
    out = bounded_hours(keywords, rows).sort("hour")
    assert clip == 10
    assert out.get_column("suppressions").to_list() == [6, 4, 0]
    assert out.get_column("events").to_list() == [1, 1, 1]
    assert out.get_column("user_days").to_list() == [1, 0, 0]  # the user-day counts at its first hour


def test_an_hour_depends_only_on_its_own_and_earlier_events() -> None:
    keywords = TABLES_BY_NAME["keywords"]
    events = [(m, u, k, s) for m, u, k, s in [(5, 1, "spoilers", 7), (70, 1, "spoilers", 9), (75, 2, "snakes", 3),
                                              (130, 1, "weather", 2), (200, 2, "spoilers", 4)]]
    whole_day = bounded_hours(keywords, _rows(events))
    first_two_hours = bounded_hours(keywords, _rows([e for e in events if e[0] < 120]))
    assert whole_day.filter(pl.col("hour") < DAY + dt.timedelta(hours=2)).equals(first_two_hours)


def test_values_outside_the_public_domain_take_no_cell() -> None:
    keywords = TABLES_BY_NAME["keywords"]
    rows = _rows([(0, 1, "not a listed keyword zz", 5), (1, 1, "spoilers", 1)])
    assert bounded_hours(keywords, rows).get_column("cell").to_list() == ["spoilers"]


def test_a_place_counts_each_keyword_once_a_day_at_its_first_hour() -> None:
    cities = PLACE_TABLES["city"]
    rows = _rows([(0, 1, "spoilers", 1), (61, 2, "spoilers", 1), (62, 2, "snakes", 1)])
    out = bounded_hours(cities, rows).sort("hour")
    assert out.get_column("keyword_days").to_list() == [1, 1]  # spoilers at hour 0, snakes at hour 1
    assert out.get_column("user_days").to_list() == [1, 1]


def test_kept_pairs_are_what_the_repeat_factors_count() -> None:
    rows = _rows([(0, 1, "spoilers", 1), (1, 1, "snakes", 1), (2, 2, "spoilers", 1)])
    changes = pl.DataFrame(schema=schema.KEYWORD_CHANGES_SCHEMA)
    pairs = kept_pairs({schema.SUPPRESSIONS: rows, schema.KEYWORD_CHANGES: changes})
    assert pairs[("keywords", "user_days")].height == 3
    assert pairs[("cities", "user_days")].height == 2
    assert pairs[("cities", "keyword_days")].height == 2
