"""`as_of` (issue 25): any earlier hour, over HTTP. The current as_of answers byte for byte what no
as_of answers; an earlier one answers what the engine answers at that hour, with the headers
saying so; a value that is not accepted is a 400 naming `as_of` with the accepted range; a past
answer stays cached until data for its dates change."""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
from email.utils import format_datetime

import polars as pl
import pytest

from service.api.periods import AsOfError, as_of_range, parse_as_of, previous_as_of, previous_bucket
from service.api.tiers import Tier
from service.clock import FixedClock
from service.engine.polars import PolarsEngine as Engine
from service.http.resources.past import past_data_version
from service.privacy import Privacy
from service.store.reader import EventStore
from tests.support.fixture_data import FIXTURE_AS_OF, FIXTURE_NOW, suppressions_frame
from tests.support.http import assert_problem, get, post_query
from tests.support.landing import write_events
from tests.support.redis_app import delete_prefix, redis_test_client
from tests.support.spec_table import GET_ENDPOINTS, REQUIRED

UTC = dt.UTC
NOW_TEXT = "2026-03-10T12:00:00Z"
PAST_TEXT = "2026-03-09T06:00:00Z"
PAST = dt.datetime(2026, 3, 9, 6, tzinfo=UTC)
FIRST_EVENT = dt.datetime(2025, 12, 10, 11, tzinfo=UTC)  # the fixture's first event


@pytest.mark.parametrize("path", list(GET_ENDPOINTS))
def test_the_current_as_of_is_byte_for_byte_no_as_of(client, keys, path):
    plain = get(client, path, keys["observer"], REQUIRED.get(path))
    for spelled in (NOW_TEXT, "2026-03-10T12:00Z", "2026-03-10T12:00:00+00:00"):
        dated = get(client, path, keys["observer"], {**REQUIRED.get(path, {}), "as_of": spelled})
        assert dated.status_code == 200, dated.text
        assert dated.content == plain.content
        assert dated.headers["etag"] == plain.headers["etag"]
        assert dated.headers["x-signals-as-of"] == NOW_TEXT


def test_the_current_as_of_is_byte_for_byte_no_as_of_on_query(client, keys):
    for body in ({"window": "7d", "group_by": ["keyword", "time"], "bucket": "day"}, {"window": "24h"},
                 {"window": "30d", "group_by": ["country"], "format": "csv"}):
        plain = post_query(client, keys["analyst"], body)
        dated = post_query(client, keys["analyst"], {**body, "as_of": NOW_TEXT})
        assert plain.status_code == dated.status_code == 200, dated.text
        assert dated.content == plain.content


@pytest.mark.parametrize("path", list(GET_ENDPOINTS))
def test_a_past_as_of_answers_that_hour(client, keys, path, fixture_store):
    from service.api.endpoints import BY_NAME

    endpoint = BY_NAME[path.strip("/").replace("-", "_")]
    dated = get(client, path, keys["observer"], {**REQUIRED.get(path, {}), "as_of": PAST_TEXT})
    assert dated.status_code == 200, dated.text
    assert dated.headers["x-signals-as-of"] == PAST_TEXT
    assert dated.headers["last-modified"] == format_datetime(PAST, usegmt=True)
    # The same engine at that hour: what the app answers at PAST, over the same data.
    request = endpoint.build({p.name: p.default for p in endpoint.params if p.name != "as_of"}
                             | {k: v for k, v in REQUIRED.get(path, {}).items()})
    frame = getattr(Engine(Privacy.exact()), endpoint.name)(fixture_store.snapshot(), PAST, request)
    records = dated.json[endpoint.records_field]
    assert len(records) == frame.height
    if frame.height and "ts" not in frame.columns:
        first = frame.row(0, named=True)
        assert {k: records[0][k] for k in first} == first
    assert dated.content != get(client, path, keys["observer"], REQUIRED.get(path)).content or frame.height == 0


def test_a_past_as_of_on_query_and_csv_names_it(client, keys):
    body = {"window": "24h", "group_by": ["keyword"], "as_of": PAST_TEXT}
    result = post_query(client, keys["analyst"], body)
    assert result.status_code == 200 and result.headers["x-signals-as-of"] == PAST_TEXT
    csv = post_query(client, keys["analyst"], {**body, "format": "csv"})
    assert 'filename="signals-query-24h-20260309T0600Z.csv"' in csv.headers["content-disposition"]


BAD = {
    "2026-03-09T06:30:00Z": "whole hour",
    "2026-03-09T06:00:01Z": "whole hour",
    "2026-03-10T13:00:00Z": "after the current as_of",
    "2027-01-01T00:00:00Z": "after the current as_of",
    "2025-12-10T10:00:00Z": "too early",
    "yesterday": "not an ISO 8601 UTC time",
    "2026-03-09": "not an ISO 8601 UTC time",
    "2026-03-09 06:00:00Z": "not an ISO 8601 UTC time",
    "2026-03-09T06:00:00": "not an ISO 8601 UTC time",
    "2026-02-30T06:00:00Z": "not a valid date",
    "2026-03-09T07:00:00+01:00": "not in UTC",
    "2026-03-09T01:00:00-05:00": "not in UTC",
    "": "not an ISO 8601 UTC time",
}


@pytest.mark.parametrize("value, reason", list(BAD.items()))
def test_bad_as_of_is_400_naming_it_with_the_accepted_range(client, keys, value, reason):
    body = assert_problem(get(client, "/top-keywords", keys["observer"], {"as_of": value}), 400, "as_of")
    (error,) = body["errors"]
    assert reason in error["reason"]
    # 24h window: from the data's first hour plus 24 hours to the current as_of
    assert "from 2025-12-11T11:00:00Z to 2026-03-10T12:00:00Z" in error["reason"]
    assert "'as_of'" in body["detail"]


def test_the_earliest_as_of_follows_the_window(client, keys):
    earliest = {"24h": "2025-12-11T11:00:00Z", "7d": "2025-12-17T11:00:00Z", "90d": "2026-03-10T11:00:00Z"}
    for window, text in earliest.items():
        assert get(client, "/keyword-timeseries", keys["observer"],
                   {"keyword": "snakes", "window": window, "as_of": text}).status_code == 200
        before = (dt.datetime.fromisoformat(text) - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = assert_problem(get(client, "/keyword-timeseries", keys["observer"],
                                  {"keyword": "snakes", "window": window, "as_of": before}), 400, "as_of")
        assert f"from {text} to {NOW_TEXT}" in body["errors"][0]["reason"]


def test_bad_as_of_in_the_query_body(client, keys):
    for value in ("2026-03-09T06:30:00Z", "2026-03-10T13:00:00Z", 1741600000, "nope"):
        assert_problem(post_query(client, keys["analyst"], {"window": "24h", "as_of": value}), 400, "as_of")


def test_as_of_is_documented_on_every_endpoint(client):
    doc = client.simulate_get("/api/v1/openapi").json
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            if "signals" not in op.get("tags", ()):
                continue
            if method == "post":
                schema = op["requestBody"]["content"]["application/json"]["schema"]["properties"]["as_of"]
            else:
                (param,) = [p for p in op["parameters"] if p["name"] == "as_of"]
                assert param["required"] is False and param["description"]
                schema = param["schema"]
            assert schema["type"] == "string" and schema["format"] == "date-time", path
            assert "default" not in schema


# -- pure parts ------------------------------------------------------------------------------

def test_accepted_range_and_parsing():
    accepted = as_of_range("24h", FIXTURE_AS_OF, FIRST_EVENT)
    assert (accepted.earliest, accepted.latest) == (dt.datetime(2025, 12, 11, 11, tzinfo=UTC), FIXTURE_AS_OF)
    assert parse_as_of("2026-03-09T06:00:00Z", accepted) == PAST
    assert parse_as_of("2026-03-09T06:00:00.000Z", accepted) == PAST
    assert parse_as_of("2026-03-09T06:00-00:00", accepted) == PAST
    with pytest.raises(AsOfError):
        parse_as_of("2026-03-09T06:00:00.5Z", accepted)
    # Data shorter than the window: only the current as_of (what no as_of answers) is accepted.
    short = as_of_range("90d", FIXTURE_AS_OF, dt.datetime(2026, 3, 1, tzinfo=UTC))
    assert short.earliest == short.latest == FIXTURE_AS_OF
    assert parse_as_of(NOW_TEXT, short) == FIXTURE_AS_OF
    assert as_of_range("24h", FIXTURE_AS_OF, None).earliest == FIXTURE_AS_OF


def test_the_previous_period_and_bucket():
    assert previous_as_of("7d", FIXTURE_AS_OF) == FIXTURE_AS_OF - dt.timedelta(days=7)
    at = dt.datetime(2026, 3, 10, 12, tzinfo=UTC)
    assert previous_bucket(dt.datetime(2026, 3, 10, 5, tzinfo=UTC), "24h", at, "hour") == \
        dt.datetime(2026, 3, 9, 5, tzinfo=UTC)
    # a day bucket that starts before the window: the day one window earlier
    assert previous_bucket(dt.datetime(2026, 3, 9, tzinfo=UTC), "24h", at, "day") == dt.datetime(2026, 3, 8, tzinfo=UTC)
    # weeks of a 30d window: the week holding the instant one window before the bucket's first instant
    monday = dt.datetime(2026, 3, 9, tzinfo=UTC)
    assert previous_bucket(monday, "30d", at, "week") == dt.datetime(2026, 2, 2, tzinfo=UTC)


def test_past_data_version_is_the_last_change_of_the_covered_dates(fixture_store):
    frames = fixture_store.snapshot()
    versions = {table: dict(v) for table, v in frames.versions.items()}
    assert past_data_version(frames, PAST - dt.timedelta(days=1), PAST) == max(
        versions["suppressions"].get(d, 0) for d in (dt.date(2026, 3, 8), dt.date(2026, 3, 9)))


# -- caching, over the real Redis --------------------------------------------------------------

@pytest.mark.redis
def test_a_past_answer_stays_cached_until_its_dates_change(tmp_path, fixture_data_dir, accounts, redis_url,
                                                         redis_prefix):
    data_dir = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data_dir)
    store = EventStore(data_dir, check_interval=0)
    client, gate, prefix = redis_test_client(redis_url, redis_prefix, data_dir, store, accounts,
                                             FixedClock(FIXTURE_NOW))
    key = accounts.create_key(Tier.OBSERVER, subscription=f"as-of-{uuid.uuid4().hex[:8]}")[0]

    def ingest(moment: dt.datetime) -> None:
        extra = suppressions_frame().filter(pl.col("keyword") == "bitcoin").head(1).with_columns(
            pl.lit("late keyword").alias("keyword"), pl.lit(5000).cast(pl.Int32).alias("suppressions"),
            pl.lit(moment).dt.cast_time_unit("us").alias("ts"))
        write_events(data_dir, "suppressions", extra)

    try:
        query = {"as_of": PAST_TEXT}
        first = get(client, "/top-keywords", key, query)
        assert first.headers["x-cache"] == "miss"
        ingest(dt.datetime(2026, 3, 10, 9, tzinfo=UTC))  # a date the past window does not cover
        later = get(client, "/top-keywords", key, query)
        assert later.headers["x-signals-data-generation"] != first.headers["x-signals-data-generation"]
        assert later.headers["x-cache"] == "hit" and later.content == first.content
        assert get(client, "/top-keywords", key).headers["x-cache"] == "miss"  # the current window did change
        ingest(dt.datetime(2026, 3, 8, 9, tzinfo=UTC))  # a date it covers
        changed = get(client, "/top-keywords", key, query)
        assert changed.headers["x-cache"] == "miss"
        assert changed.json["keywords"][0]["keyword_raw"] == "late keyword"
    finally:
        gate.close()
        delete_prefix(redis_url, prefix)


# -- the defaults, over real HTTP (gunicorn from the Procfile) ---------------------------------

@pytest.mark.process
def test_defaults_are_unchanged_over_real_http(tmp_path):
    """Without the new parameters every body has exactly the spec's fields; with the current as_of
    it is the same bytes; with compare and intervals the spec's fields keep their values."""
    import httpx

    from tests.support.fixture_data import write_fixture_store
    from tests.support.processes import create_key, gunicorn
    from tests.support.spec_table import ADDED, BASE, ENVELOPES

    write_fixture_store(tmp_path)
    key = create_key(tmp_path, "analyst")
    with gunicorn(tmp_path) as (base, log), httpx.Client(base_url=base, timeout=30,
                                                          headers={"Authorization": f"Bearer {key}"}) as http:
        for path, (fields, records_field, record_types) in ENVELOPES.items():
            query = {**REQUIRED.get(path, {}), "window": "7d"}
            plain = http.get(BASE + path, params=query)
            assert plain.status_code == 200, plain.text
            assert list(plain.json()) == fields
            assert all(set(r) == set(record_types) for r in plain.json()[records_field])
            as_of = plain.headers["x-signals-as-of"]
            assert http.get(BASE + path, params={**query, "as_of": as_of}).content == plain.content
            if "compare" in ADDED[path]:
                extended = http.get(BASE + path, params={**query, "compare": "previous_period", "intervals": "true"})
                assert extended.status_code == 200, extended.text
                assert list(extended.json()) == fields
                assert [{k: r[k] for k in record_types} for r in extended.json()[records_field]] == \
                    plain.json()[records_field]
        body = {"window": "7d", "group_by": ["keyword"]}
        plain = http.post(BASE + "/query", json=body)
        assert plain.status_code == 200
        assert all(set(r) == {"keyword", "suppressions", "unique_users", "events"} for r in plain.json()["results"])
        dated = http.post(BASE + "/query", json={**body, "as_of": plain.headers["x-signals-as-of"]})
        assert dated.content == plain.content
    assert "Traceback" not in log[0], log[0]


def test_a_past_as_of_plan_is_remembered_like_any_other(app, keys, client):
    """A repeated GET skips validation and key derivation (the memo of prepared requests), a past as_of included."""
    from service.http.resources.signals import SignalsResource

    resource = next(r for r in _resources(app) if isinstance(r, SignalsResource) and r.endpoint.name == "geo_heat")
    query = {"window": "7d", "as_of": PAST_TEXT}
    first = get(client, "/geo-heat", keys["observer"], query)
    prepared = resource._prepared["window=7d&as_of=2026-03-09T06%3A00%3A00Z"]
    assert (prepared.as_of, prepared.current) == (PAST, FIXTURE_AS_OF)
    again = get(client, "/geo-heat", keys["observer"], query)
    assert resource._prepared["window=7d&as_of=2026-03-09T06%3A00%3A00Z"] is prepared
    assert again.content == first.content and again.headers["x-signals-as-of"] == PAST_TEXT


def _resources(app):
    """The resources routed in a Falcon app."""
    pending = list(app._router._roots)
    while pending:
        node = pending.pop()
        pending.extend(node.children)
        if node.resource is not None:
            yield node.resource
