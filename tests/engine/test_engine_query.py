"""POST /query in the engine: filters, group_by combinations, totals, order, limit, columns."""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import service.geo
from service.api.windows import bucket_start, window_range
from service.engine.requests import FILTER_COLUMNS, GEO_LEVELS, FlexibleQuery
from service.privacy import Privacy
from tests.support import fixture_data as fx
from tests.support.engines import Engine

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

UTC = dt.UTC
MEASURES = ("suppressions", "unique_users", "events")


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


def run(frames, window="24h", filters=None, group_by=(), bucket=None, order_by="suppressions", order="desc", limit=100):
    req = FlexibleQuery(
        window=window, filters=filters or {}, group_by=tuple(group_by), bucket=bucket,
        order_by=order_by, order=order, limit=limit,
    )
    return Engine(Privacy.exact()).query(frames, fx.FIXTURE_AS_OF, req)


def output_schema(group_by) -> dict[str, Any]:
    columns: dict[str, Any] = {}
    for dimension in group_by:
        if dimension in GEO_LEVELS:
            columns[f"{dimension}_id"] = pl.String
            columns[f"{dimension}_name"] = pl.String
        elif dimension == "time":
            columns["ts"] = pl.Datetime("us", "UTC")
        else:
            columns[dimension] = pl.String
    return columns | {measure: pl.Int64 for measure in MEASURES}


def naive(window="24h", filters=None, group_by=(), bucket=None, order_by="suppressions", order="desc", limit=100):
    rows = fx.rows_in(fx.suppression_rows(), window_range(window, fx.FIXTURE_AS_OF))
    for key, values in (filters or {}).items():
        rows = [row for row in rows if row[FILTER_COLUMNS[key]] in values]
    cells: dict[tuple, list] = {} if group_by else {(): [0, set(), 0]}
    for row in rows:
        key = tuple(bucket_start(row["ts"], bucket) if g == "time" else row[g] for g in group_by)
        if any(part is None for part in key):
            continue
        cell = cells.setdefault(key, [0, set(), 0])
        cell[0] += row["suppressions"]
        cell[1].add(row["user_id"])
        cell[2] += 1
    measured = [(key, (s, len(users), events)) for key, (s, users, events) in cells.items()]
    index = MEASURES.index(order_by)
    sign = -1 if order == "desc" else 1
    measured.sort(key=lambda item: (sign * item[1][index], item[0]))
    measured = measured[:limit]
    columns: dict[str, list] = {}
    for position, dimension in enumerate(group_by):
        values = [key[position] for key, _ in measured]
        if dimension in GEO_LEVELS:
            columns[f"{dimension}_id"] = values
            columns[f"{dimension}_name"] = service.geo.labels(dimension, values)
        else:
            columns["ts" if dimension == "time" else dimension] = values
    for i, measure in enumerate(MEASURES):
        columns[measure] = [numbers[i] for _, numbers in measured]
    return pl.DataFrame(columns, schema=output_schema(group_by))


def test_empty_group_by_is_one_row_of_totals(frames) -> None:
    expected = pl.DataFrame([fx.EXPECTED_QUERY_TOTALS_24H], schema=output_schema(()), orient="row")
    assert_frame_equal(run(frames), expected)
    assert_frame_equal(naive(), expected)


def test_totals_are_zeros_when_nothing_matches(frames) -> None:
    result = run(frames, filters={"keywords": ("no such keyword",)})
    assert_frame_equal(result, pl.DataFrame([(0, 0, 0)], schema=output_schema(()), orient="row"))


def test_output_columns_follow_group_by_order(frames) -> None:
    result = run(frames, group_by=("city", "time", "platform", "country"), bucket="day")
    assert result.columns == [
        "city_id", "city_name", "ts", "platform", "country_id", "country_name", *MEASURES,
    ]
    assert result.schema == pl.Schema(output_schema(("city", "time", "platform", "country")))


CASES = [
    dict(group_by=("keyword",)),
    dict(group_by=("domain",)),
    dict(group_by=("platform",), window="7d"),
    dict(group_by=("page_context",), window="30d"),
    dict(group_by=("country",)),
    dict(group_by=("region",), window="7d"),
    dict(group_by=("county",), window="90d"),
    dict(group_by=("city",), window="1h"),
    dict(group_by=("time",), bucket="hour"),
    dict(group_by=("time",), bucket="day", window="30d"),
    dict(group_by=("time",), bucket="week", window="90d"),
    dict(group_by=("keyword", "time"), bucket="day", window="7d"),
    dict(group_by=("time", "keyword"), bucket="hour", window="6h"),
    dict(group_by=("domain", "platform")),
    dict(group_by=("country", "region", "county", "city", "keyword"), window="30d"),
    dict(group_by=("keyword",), filters={"keywords": ("snakes", "crypto")}),
    dict(group_by=("keyword",), filters={"keywords": ("snakes", "crypto"), "platforms": ("android",)}),
    dict(group_by=("domain",), filters={"countries": ("US",)}, window="7d"),
    dict(group_by=("platform",), filters={"regions": ("US-CA", "DE-BE")}),
    dict(group_by=("keyword",), filters={"counties": ("06037",)}, window="30d"),
    dict(group_by=("keyword", "country"), filters={"cities": ("2950159", "5128581")}),
    dict(group_by=("page_context",), filters={"domains": ("reddit.com", "x.com"), "page_contexts": ("feed", "search")}),
    dict(group_by=(), filters={"countries": ("GB",)}, window="7d"),
    dict(group_by=("keyword",), order="asc"),
    dict(group_by=("keyword",), order_by="unique_users"),
    dict(group_by=("keyword",), order_by="events", order="asc", limit=3),
    dict(group_by=("domain", "keyword"), order_by="unique_users", limit=5, window="30d"),
    dict(group_by=("time",), bucket="hour", order="asc", window="12h"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(f"{k}={v}" for k, v in case.items()))
def test_matches_a_naive_computation(frames, case: dict) -> None:
    assert_frame_equal(run(frames, **case), naive(**case))


def test_the_cases_are_not_empty(frames) -> None:
    for case in CASES:
        assert run(frames, **case).get_column("events").sum() > 0, case


def test_rows_with_a_null_grouped_geo_column_are_left_out(frames) -> None:
    by_region = run(frames, group_by=("region",))
    assert by_region.get_column("region_id").to_list() == ["US-CA", "US-NY", "DE-BE"]
    assert by_region.get_column("suppressions").sum() == 363 - 85  # GB events have no region
    by_county = run(frames, group_by=("keyword", "county"))
    assert set(by_county.get_column("county_id")) == {"06037", "36061"}
    # ... but only when that column is grouped: totals still count every event
    assert run(frames).get_column("suppressions").to_list() == [363]


def test_order_ties_break_on_dimension_values(frames) -> None:
    result = run(frames, group_by=("keyword",), order_by="unique_users")
    # users in 24h: weather 15; elon musk and snakes 4; crypto and spoilers 2; four keywords with 1
    assert result.select("keyword", "unique_users").rows() == [
        ("weather", 15), ("elon musk", 4), ("snakes", 4), ("crypto", 2), ("spoilers", 2),
        ("ai art", 1), ("bitcoin", 1), ("fresh", 1), ("tiny", 1),
    ]


def test_order_asc_and_limit(frames) -> None:
    result = run(frames, group_by=("keyword",), order="asc", limit=2)
    assert result.select("keyword", "suppressions").rows() == [("fresh", 3), ("bitcoin", 15)]


def test_time_groups_by_bucket_start(frames) -> None:
    result = run(frames, filters={"keywords": ("elon musk",)}, group_by=("time",), bucket="week", window="30d", order="asc")
    # no zero-filling: only weeks with events, and the 02-08T06:00 event is before the window
    assert result.sort("ts").rows() == [
        (dt.datetime(2026, 2, 2, tzinfo=UTC), 13, 1, 1),
        (dt.datetime(2026, 2, 9, tzinfo=UTC), 10, 1, 1),    # Sunday 02-15
        (dt.datetime(2026, 2, 16, tzinfo=UTC), 70, 5, 7),   # 02-16..02-22 at 10 each
        (dt.datetime(2026, 2, 23, tzinfo=UTC), 20, 2, 2),   # 02-23, 02-24
        (dt.datetime(2026, 3, 2, tzinfo=UTC), 136, 6, 32),  # 03-03T08:00 (7), 13:00 (9), 30 x 4 on 03-05/06
        (dt.datetime(2026, 3, 9, tzinfo=UTC), 80, 4, 16),   # = the 24h total of elon musk
    ]


def test_geo_names_are_labels_of_the_ids(frames) -> None:
    result = run(frames, group_by=("county", "city"))
    for county_id, county_name, city_id, city_name, *_ in result.rows():
        assert county_name == service.geo.labels("county", [county_id])[0]
        assert city_name == service.geo.labels("city", [city_id])[0]
    assert result.get_column("county_name").to_list()[0].startswith("Los Angeles")


def test_grouping_by_time_needs_a_bucket(frames) -> None:
    with pytest.raises(ValueError, match="bucket"):
        run(frames, group_by=("time",))
