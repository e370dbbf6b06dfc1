"""POST /query: body validation, the result shapes, ordering, limits, CSV."""

from __future__ import annotations

import csv
import io

import pytest

from tests.support.http import assert_problem, post_query
from tests.support.secret import TEST_SECRET
from tests.support.spec_table import QUERY_FILTER_KEYS, QUERY_GROUP_BY, QUERY_WINDOWS

GEO_FIELDS = {"country": ["country_id", "country_name"], "region": ["region_id", "region_name"],
              "county": ["county_id", "county_name"], "city": ["city_id", "city_name"]}
MEASURES = ["suppressions", "unique_users", "events"]


def fields_for(group_by: list[str]) -> list[str]:
    out: list[str] = []
    for dim in group_by:
        out += GEO_FIELDS.get(dim, ["ts"] if dim == "time" else [dim])
    return out + MEASURES


@pytest.mark.parametrize("window", QUERY_WINDOWS)
def test_every_window_with_defaults_gives_one_row_of_totals(client, keys, window):
    result = post_query(client, keys["analyst"], {"window": window})
    assert result.status_code == 200, result.text
    body = result.json
    assert list(body) == ["window", "bucket", "group_by", "results", "disclaimer"]
    assert body["window"] == window and body["bucket"] is None and body["group_by"] == []
    assert len(body["results"]) == 1 and list(body["results"][0]) == MEASURES
    assert all(isinstance(v, int) and v >= 0 for v in body["results"][0].values())


def test_window_is_required(client, keys):
    assert_problem(post_query(client, keys["analyst"], {}), 400, "window")
    assert_problem(post_query(client, keys["analyst"], {"window": "2d"}), 400, "window")


@pytest.mark.parametrize("dim", QUERY_GROUP_BY)
def test_each_group_by_dimension_has_its_fields(client, keys, dim):
    body = {"window": "90d", "group_by": [dim]}
    if dim == "time":
        body["bucket"] = "day"
    result = post_query(client, keys["analyst"], body)
    assert result.status_code == 200, result.text
    rows = result.json["results"]
    assert rows, f"fixture data should have rows for {dim}"
    for row in rows:
        assert list(row) == fields_for([dim])


def test_group_by_order_is_the_field_order(client, keys):
    body = {"window": "30d", "group_by": ["platform", "country", "keyword"]}
    rows = post_query(client, keys["analyst"], body).json["results"]
    assert rows and list(rows[0]) == fields_for(["platform", "country", "keyword"])


def test_time_needs_a_bucket(client, keys):
    body = assert_problem(post_query(client, keys["analyst"], {"window": "7d", "group_by": ["time"]}), 400, "bucket")
    assert "hour, day, week" in body["errors"][0]["reason"]
    for bucket in ("hour", "day", "week"):
        result = post_query(client, keys["analyst"], {"window": "7d", "group_by": ["time"], "bucket": bucket})
        assert result.status_code == 200 and result.json["bucket"] == bucket
    assert_problem(post_query(client, keys["analyst"], {"window": "7d", "group_by": ["time"], "bucket": "month"}), 400, "bucket")


def test_group_by_bounds(client, keys):
    five = ["keyword", "domain", "platform", "page_context", "country"]
    assert post_query(client, keys["analyst"], {"window": "24h", "group_by": five}).status_code == 200
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "group_by": five + ["city"]}), 400, "group_by")
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "group_by": ["keyword", "keyword"]}), 400, "group_by")
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "group_by": ["month"]}), 400, "group_by[0]")
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "group_by": "keyword"}), 400, "group_by")


@pytest.mark.parametrize("key", QUERY_FILTER_KEYS)
def test_filter_arrays_accept_up_to_50_values(client, keys, key):
    values = {"platforms": ["chrome", "firefox"], "page_contexts": ["feed", "search"], "countries": ["US", "DE"]}.get(
        key, ["a", "b"])
    assert post_query(client, keys["analyst"], {"window": "24h", "filters": {key: values}}).status_code == 200
    many = [f"v{i}" for i in range(51)] if key not in ("platforms", "page_contexts", "countries") else None
    if many:
        assert_problem(post_query(client, keys["analyst"], {"window": "24h", "filters": {key: many}}), 400, f"filters.{key}")
        fifty = many[:50]
        assert post_query(client, keys["analyst"], {"window": "24h", "filters": {key: fifty}}).status_code == 200
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "filters": {key: []}}), 400, f"filters.{key}")
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "filters": {key: "x"}}), 400, f"filters.{key}")


def test_filters_validate_keys_and_enum_values(client, keys):
    body = assert_problem(post_query(client, keys["analyst"], {"window": "24h", "filters": {"keyword": ["x"]}}),
                          400, "filters.keyword")
    assert "Did you mean 'keywords'" in body["errors"][0]["reason"]
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "filters": {"platforms": ["netscape"]}}),
                   400, "filters.platforms[0]")
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "filters": ["keywords"]}), 400, "filters")


def test_filter_selects_only_matching_events(client, keys):
    everything = post_query(client, keys["analyst"], {"window": "90d", "group_by": ["platform"], "limit": 1000}).json
    by_platform = {row["platform"]: row for row in everything["results"]}
    some = next(iter(by_platform))
    only = post_query(client, keys["analyst"], {"window": "90d", "filters": {"platforms": [some]}}).json["results"][0]
    assert only["suppressions"] == by_platform[some]["suppressions"]
    assert only["events"] == by_platform[some]["events"]


def test_filter_values_are_normalised_like_stored_ids(client, keys):
    plain = post_query(client, keys["analyst"], {"window": "90d", "filters": {"countries": ["US"]}}).json
    lower = post_query(client, keys["analyst"], {"window": "90d", "filters": {"countries": ["us"]}}).json
    assert plain["results"] == lower["results"]


@pytest.mark.parametrize("order_by", MEASURES)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_order_by_and_order(client, keys, order_by, order):
    rows = post_query(client, keys["analyst"], {"window": "90d", "group_by": ["domain"], "order_by": order_by,
                                                "order": order, "limit": 1000}).json["results"]
    values = [row[order_by] for row in rows]
    assert values == sorted(values, reverse=(order == "desc"))


def test_order_by_and_order_reject_other_values(client, keys):
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "order_by": "users"}), 400, "order_by")
    assert_problem(post_query(client, keys["analyst"], {"window": "24h", "order": "down"}), 400, "order")


def test_limit_bounds_and_default(client, keys):
    for ok in (1, 1000):
        assert post_query(client, keys["analyst"], {"window": "24h", "limit": ok}).status_code == 200
    for bad in (0, 1001, "10", 2.5, True):
        assert_problem(post_query(client, keys["analyst"], {"window": "24h", "limit": bad}), 400, "limit")
    grouped = {"window": "90d", "group_by": ["keyword", "domain", "platform", "page_context", "city"]}
    rows_default = post_query(client, keys["analyst"], grouped).json["results"]
    rows_all = post_query(client, keys["analyst"], {**grouped, "limit": 1000}).json["results"]
    assert len(rows_default) == min(100, len(rows_all))
    assert len(post_query(client, keys["analyst"], {**grouped, "limit": 1}).json["results"]) == 1


def test_results_are_deterministic_with_ties(client, keys):
    body = {"window": "90d", "group_by": ["keyword", "platform"], "order_by": "events", "limit": 1000}
    first = post_query(client, keys["analyst"], body).content
    assert all(post_query(client, keys["analyst"], body).content == first for _ in range(3))


def test_csv_format(client, keys):
    body = {"window": "30d", "group_by": ["country", "keyword", "time"], "bucket": "day", "format": "csv", "limit": 1000}
    result = post_query(client, keys["analyst"], body)
    assert result.status_code == 200
    assert result.headers["content-type"] == "text/csv; charset=utf-8; header=present"
    disposition = result.headers["content-disposition"]
    assert disposition.startswith("attachment; filename=\"signals-query-30d-") and disposition.endswith("Z.csv\"")
    assert result.headers["x-signals-disclaimer"]
    raw = result.content
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    assert rows[0] == fields_for(["country", "keyword", "time"])
    as_json = post_query(client, keys["analyst"], {**body, "format": "json"}).json["results"]
    assert len(rows) - 1 == len(as_json)
    for line, record in zip(rows[1:], as_json, strict=True):
        assert line == [str(record[f]) if not str(record[f]).startswith(("=", "+", "-", "@")) else "'" + record[f]
                        for f in rows[0]]


def test_csv_errors_are_problem_json_not_half_files(client, keys):
    result = post_query(client, keys["analyst"], {"window": "nope", "format": "csv"})
    assert_problem(result, 400, "window")


@pytest.mark.parametrize("raw, status", [
    (b"{not json", 400), (b"", 400), (b"[1, 2]", 400), (b"\xff\xfe", 400), (b"null", 400), (b'"window"', 400),
])
def test_malformed_bodies(client, keys, raw, status):
    assert_problem(post_query(client, keys["analyst"], None, raw=raw), status)


def test_wrong_content_type_is_415(client, keys):
    result = client.simulate_post("/api/v1/signals/query", body=b'{"window":"24h"}',
                                  headers={"Authorization": f"Bearer {keys['analyst']}", "Content-Type": "text/plain"})
    assert_problem(result, 415)
    result = client.simulate_post("/api/v1/signals/query", body=b'{"window":"24h"}',
                                  headers={"Authorization": f"Bearer {keys['analyst']}"})
    assert_problem(result, 415)


def test_body_over_64_kib_is_413(client, keys):
    big = b'{"window": "24h", "pad": "' + b"x" * (64 * 1024) + b'"}'
    assert_problem(post_query(client, keys["analyst"], None, raw=big), 413)


def test_query_string_on_post_is_400(client, keys):
    result = client.simulate_post("/api/v1/signals/query", body=b'{"window":"24h"}', query_string="window=24h",
                                  headers={"Authorization": f"Bearer {keys['analyst']}",
                                           "Content-Type": "application/json"})
    assert_problem(result, 400, "window")


def test_unknown_body_field_is_400(client, keys):
    body = assert_problem(post_query(client, keys["analyst"], {"window": "24h", "groupby": ["keyword"]}), 400, "groupby")
    assert "Did you mean 'group_by'" in body["errors"][0]["reason"]


@pytest.mark.parametrize("raw, name", [
    (b'{"window": "24h", "filters": {"keywords": ["\\ud800"]}}', "filters.keywords[0]"),
    (b'{"window": "24h", "filters": {"cities": ["ok", "\\udfff"]}}', "filters.cities[1]"),
    (b"[" * 60000, "body"),
    (b'{"window": ' + b"[" * 30000 + b"]" * 30000 + b"}", "body"),
])
def test_hostile_bodies_are_400_not_500(client, keys, raw, name):
    assert_problem(post_query(client, keys["analyst"], None, raw=raw), 400, name)


def test_a_hostile_body_still_counts_against_the_rate_limit(client, keys):
    result = post_query(client, keys["analyst"], None, raw=b"[" * 60000)
    assert result.headers["x-ratelimit-remaining"] == "119"


def test_totals_row_is_always_there_even_when_suppressed(fixture_data_dir, fixture_store, accounts, keys):
    """With the real privacy stage, a totals cell with too few users is one row of zeros."""
    import falcon.testing

    from cache import LocalGate
    from service.app import create_app
    from service.clock import FixedClock
    from service.settings import Settings
    from tests.support.fixture_data import FIXTURE_NOW

    app = create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=FixedClock(FIXTURE_NOW), store=fixture_store,
                     accounts=accounts, gate=LocalGate())
    client = falcon.testing.TestClient(app)
    body = post_query(client, keys["analyst"], {"window": "24h", "filters": {"keywords": ["fresh"]}}).json  # 1 user
    assert body["results"] == [{"suppressions": 0, "unique_users": 0, "events": 0}]
