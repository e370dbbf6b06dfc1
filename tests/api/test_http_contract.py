"""Every GET endpoint against the spec table: fields, types, defaults, echoes, bounds, enums."""

from __future__ import annotations

import pytest

from tests.support.http import assert_problem, get
from tests.support.spec_table import ENVELOPES, GET_ENDPOINTS, REQUIRED

PATHS = list(GET_ENDPOINTS)


def _enum_cases():
    for path, params in GET_ENDPOINTS.items():
        for name, (allowed, _default) in params.items():
            if isinstance(allowed, list):
                for value in allowed:
                    yield path, name, value


def _bad_enum_cases():
    for path, params in GET_ENDPOINTS.items():
        for name, (allowed, _default) in params.items():
            if isinstance(allowed, list):
                for value in ("", "bogus", allowed[0].upper() + "x", "90d" if "90d" not in allowed else "2h"):
                    yield path, name, value


def _bound_cases():
    for path, params in GET_ENDPOINTS.items():
        for name, (allowed, _default) in params.items():
            if isinstance(allowed, tuple):
                yield path, name, allowed


@pytest.mark.parametrize("path", PATHS)
def test_default_call_returns_the_spec_envelope(client, keys, path):
    result = get(client, path, keys["observer"], REQUIRED.get(path))
    assert result.status_code == 200, result.text
    assert result.headers["content-type"].startswith("application/json")
    fields, records_field, record_types = ENVELOPES[path]
    body = result.json
    assert list(body) == fields
    assert isinstance(body["disclaimer"], str) and body["disclaimer"]
    for name, (_allowed, default) in GET_ENDPOINTS[path].items():
        if name in body and default is not None:
            assert body[name] == default, name
    assert isinstance(body[records_field], list)
    for record in body[records_field]:
        assert set(record) == set(record_types)
        for field, kind in record_types.items():
            assert isinstance(record[field], kind) and not isinstance(record[field], bool), (field, record)


@pytest.mark.parametrize("path, name, value", list(_enum_cases()))
def test_every_allowed_value_is_accepted_and_echoed(client, keys, path, name, value):
    result = get(client, path, keys["observer"], {**REQUIRED.get(path, {}), name: value})
    assert result.status_code == 200, result.text
    if name in result.json:
        assert result.json[name] == value


@pytest.mark.parametrize("path, name, value", list(_bad_enum_cases()))
def test_values_outside_the_allowed_set_are_400(client, keys, path, name, value):
    result = get(client, path, keys["observer"], {**REQUIRED.get(path, {}), name: value})
    body = assert_problem(result, 400, name)
    assert any(allowed in body["errors"][0]["reason"] for allowed in GET_ENDPOINTS[path][name][0])


@pytest.mark.parametrize("path, name, bounds", list(_bound_cases()))
def test_integer_bounds(client, keys, path, name, bounds):
    low, high = bounds
    for ok in (low, high):
        assert get(client, path, keys["observer"], {**REQUIRED.get(path, {}), name: str(ok)}).status_code == 200
    for bad in (low - 1, high + 1, "1.5", "x", ""):
        body = assert_problem(get(client, path, keys["observer"], {**REQUIRED.get(path, {}), name: str(bad)}), 400, name)
        assert f"{low} to {high}" in body["errors"][0]["reason"]


@pytest.mark.parametrize("path, name, bounds", list(_bound_cases()))
def test_limit_default_is_the_spec_default(client, keys, path, name, bounds):
    default = GET_ENDPOINTS[path][name][1]
    implicit = get(client, path, keys["observer"], REQUIRED.get(path))
    explicit = get(client, path, keys["observer"], {**REQUIRED.get(path, {}), name: str(default)})
    assert implicit.content == explicit.content
    one = get(client, path, keys["observer"], {**REQUIRED.get(path, {}), name: "1"})
    records_field = ENVELOPES[path][1]
    assert len(one.json[records_field]) <= 1


@pytest.mark.parametrize("path", PATHS)
def test_unknown_parameter_is_400_with_a_hint(client, keys, path):
    body = assert_problem(get(client, path, keys["observer"], {**REQUIRED.get(path, {}), "windw": "24h"}), 400, "windw")
    assert "Did you mean 'window'" in body["errors"][0]["reason"]


@pytest.mark.parametrize("path", PATHS)
def test_repeated_parameter_is_400(client, keys, path):
    query = "&".join(f"{k}={v}" for k, v in REQUIRED.get(path, {}).items())
    result = get(client, path, keys["observer"], (query + "&" if query else "") + "window=24h&window=7d")
    assert_problem(result, 400, "window")


@pytest.mark.parametrize("path", ["/keyword-timeseries", "/domain-timeseries"])
def test_required_subject_is_400_when_missing_or_blank(client, keys, path):
    name = next(iter(REQUIRED[path]))
    assert_problem(get(client, path, keys["observer"]), 400, name)
    assert_problem(get(client, path, keys["observer"], {name: "   "}), 400, name)
    assert_problem(get(client, path, keys["observer"], {name: "x" * 300}), 400, name)


def test_min_baseline_default_is_10_and_accepts_numbers(client, keys):
    implicit = get(client, "/trending", keys["observer"])
    assert implicit.content == get(client, "/trending", keys["observer"], {"min_baseline": "10"}).content
    assert implicit.content == get(client, "/trending", keys["observer"], {"min_baseline": "10.0"}).content
    zero = get(client, "/trending", keys["observer"], {"min_baseline": "0"})
    assert len(zero.json["trending"]) >= len(implicit.json["trending"])
    for bad in ("-1", "ten", "nan", "inf", ""):
        assert_problem(get(client, "/trending", keys["observer"], {"min_baseline": bad}), 400, "min_baseline")


def test_trending_periods_are_human_readable(client, keys):
    expected = {"24h": ("last 6 hours", "6 to 24 hours ago"), "7d": ("last 24 hours", "1 to 7 days ago"),
                "30d": ("last 7 days", "7 to 30 days ago")}
    for window, (recent, baseline) in expected.items():
        body = get(client, "/trending", keys["observer"], {"window": window}).json
        assert (body["recent_period"], body["baseline_period"]) == (recent, baseline)


def test_timeseries_subject_is_normalised_and_unknown_gives_zeros(client, keys):
    body = get(client, "/keyword-timeseries", keys["observer"],
               {"keyword": "  No-Such   KEYWORD ", "window": "24h"}).json
    assert body["keyword"] == "no-such keyword"
    assert len(body["timeseries"]) == 24
    assert all(b["suppressions"] == b["users_est"] == b["events"] == 0 for b in body["timeseries"])
    body = get(client, "/domain-timeseries", keys["observer"],
               {"domain": "https://WWW.Nowhere.Example/path", "window": "7d", "bucket": "day"}).json
    assert body["domain"] == "nowhere.example"
    assert all(b["suppressions"] == 0 for b in body["timeseries"])


@pytest.mark.parametrize("window, bucket, count", [
    ("24h", "hour", 24), ("7d", "hour", 168), ("30d", "hour", 720), ("90d", "hour", 2160),
])
def test_hourly_timeseries_has_one_bucket_per_hour(client, keys, window, bucket, count):
    body = get(client, "/keyword-timeseries", keys["observer"],
               {"keyword": "x", "window": window, "bucket": bucket}).json
    stamps = [b["ts"] for b in body["timeseries"]]
    assert len(stamps) == count and stamps == sorted(stamps)
    assert all(ts.endswith(":00:00Z") for ts in stamps)


def test_trailing_slash_is_the_same_endpoint(client, keys):
    from tests.support.spec_table import BASE

    result = client.simulate_get(BASE + "/top-keywords/", headers={"Authorization": f"Bearer {keys['observer']}"})
    assert result.status_code == 200


def test_domain_is_reduced_to_the_registrable_domain_like_stored_ones(client, keys):
    sub = get(client, "/domain-timeseries", keys["observer"], {"domain": "https://old.Reddit.com/r/x", "window": "90d"})
    plain = get(client, "/domain-timeseries", keys["observer"], {"domain": "reddit.com", "window": "90d"})
    assert sub.json["domain"] == "reddit.com"
    assert sub.json["timeseries"] == plain.json["timeseries"]
