"""connectors.client.SignalsClient against the real API: the app in-process through httpx's WSGI
transport, and over real HTTP (a server thread, behind a front that drops connections or answers
503) for the retries."""

from __future__ import annotations

import inspect
import json

import httpx
import polars as pl
import pytest

from connectors import __version__
from connectors.client import USER_AGENT, SignalsClient, SignalsError
from connectors.operations import Operations
from connectors.settings import ConnectorSettings
from service.api.endpoints import ENDPOINTS
from service.api.openapi import build_openapi
from tests.support.api_server import BASE_URL, FlakyFront, Recorder, Ticker, make_app, serve
from tests.support.spec_table import BASE, GET_ENDPOINTS


@pytest.fixture
def ticker() -> Ticker:
    return Ticker()


@pytest.fixture
def api_app(fixture_data_dir, fixture_store, accounts, ticker):
    return make_app(fixture_data_dir, fixture_store, accounts, ticker)


@pytest.fixture
def connect(api_app, ticker):
    """A client of the in-process app for a key; `.recorder` holds what it sent."""
    made = []

    def make(key: str | None, **options) -> SignalsClient:
        recorder = Recorder(httpx.WSGITransport(app=api_app))
        client = SignalsClient(BASE_URL, key, transport=recorder, sleep=ticker.sleep, **options)
        client.recorder = recorder
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def raw(api_app, key, method, path, params=None, body=None):
    """The same request sent without the client (no checks, no retries)."""
    with httpx.Client(transport=httpx.WSGITransport(app=api_app), base_url=BASE_URL) as http:
        headers = {"Authorization": f"Bearer {key}"}
        if body is not None:
            return http.request(method, path, content=json.dumps(body), headers={**headers, "Content-Type": "application/json"})
        return http.request(method, path, params=params, headers=headers)


# -- every method --------------------------------------------------------------------------

CALLS = {endpoint.name: dict(endpoint.example) for endpoint in ENDPOINTS}  # the table's example of each


@pytest.mark.parametrize("name", list(CALLS))
def test_every_method_returns_the_apis_body(connect, api_app, keys, name):
    client = connect(keys["professional"])
    arguments = CALLS[name]
    body = getattr(client, name)(**arguments)
    operation = client.operation(name)
    if operation.in_body:
        expected = raw(api_app, keys["professional"], "POST", operation.path, body=arguments)
    else:
        expected = raw(api_app, keys["professional"], "GET", operation.path, params=arguments)
    assert expected.status_code == 200
    assert body == expected.json()
    assert body[operation.records_field], "the fixture has records for every call"

    frame = getattr(client, name)(**arguments, frame=True)
    assert isinstance(frame, pl.DataFrame)
    records = body[operation.records_field]
    assert frame.height == len(records) and frame.columns == list(records[0])
    documented = operation.record_schema["properties"]
    for column, value in records[0].items():
        if documented[column]["type"] == "integer":
            assert frame.schema[column] == pl.Int64, column
        elif documented[column]["type"] == "number":
            assert frame.schema[column] == pl.Float64, column
        elif column == "ts":
            assert frame.schema[column] == pl.Datetime("us", "UTC")
            assert frame[column][0].isoformat().replace("+00:00", "Z") == value


def test_account(connect, keys):
    for plan in ("observer", "analyst"):
        account = connect(keys[plan]).account()
        assert account["plan"] == plan
        operations = {e["operation"] for e in account["endpoints"]}
        assert ("query" in operations) is (plan == "analyst")


def test_query_csv_comes_as_text_and_frames(connect, keys):
    client = connect(keys["analyst"])
    text = client.query(window="30d", group_by=["keyword"], format="csv", limit=3)
    assert isinstance(text, str) and text.lstrip("\ufeff").startswith("keyword,suppressions")
    frame = client.query(window="30d", group_by=["keyword"], format="csv", limit=3, frame=True)
    assert frame.columns == ["keyword", "suppressions", "unique_users", "events"] and frame.height == 3


# -- the parameter table is the document's ---------------------------------------------------

def test_parameter_table_equals_the_openapi_document(connect, keys):
    client = connect(keys["observer"])
    document = build_openapi()
    operations = {op["operationId"]: (path, method, op) for path, methods in document["paths"].items()
                  for method, op in methods.items()
                  if not {"webhooks", "tokens"} & set(op.get("tags", ()))}  # not data: account management
    assert set(client.operations) == set(operations)
    for name, (path, method, op) in operations.items():
        table = client.operation(name)
        assert (table.path, table.method) == (path, method.upper())
        if "requestBody" in op:
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            documented = {n: (s, n in schema["required"]) for n, s in schema["properties"].items()}
        else:
            documented = {p["name"]: ({**p["schema"], "description": p["description"]}, p["required"])
                          for p in op.get("parameters", [])}
        assert {p.name: (dict(p.schema), p.required) for p in table.params} == documented
        # one method per operation, its parameters named exactly as documented
        method_params = inspect.signature(getattr(client, name)).parameters
        assert [n for n in method_params if n not in ("frame", "all_pages")] == list(documented), name
    # and the spec's bounds reach the client (tests/support/spec_table.py is typed by hand)
    for path, params in GET_ENDPOINTS.items():
        table = client.operation(path.strip("/"))
        for name, (allowed, default) in params.items():
            param = table.param(name)
            assert param.default == default
            if isinstance(allowed, list):
                assert param.enum == allowed
            elif isinstance(allowed, tuple):
                assert (param.minimum, param.maximum) == allowed


def test_operations_found_by_slug_id_and_tool(connect, keys):
    client = connect(keys["observer"])
    assert client.operation("top-keywords") is client.operation("top_keywords") is client.operation(
        "signals_top_keywords")
    with pytest.raises(SignalsError, match="Did you mean 'top-keywords'"):
        client.operation("top-keyword")


# -- arguments refused before any request, in the API's words --------------------------------

INVALID = [
    ("top_keywords", {"limit": 0}),
    ("top_keywords", {"limit": 501, "window": "2d"}),
    ("top_keywords", {"limit": "ten"}),
    ("top_keywords", {"limit": 10.5}),
    ("top_keywords", {"limt": 5}),
    ("top_keywords", {"window": ["7d", "24h"]}),
    ("keyword_timeseries", {}),
    ("keyword_timeseries", {"keyword": ""}),
    ("keyword_timeseries", {"keyword": "   "}),
    ("keyword_timeseries", {"keyword": "x" * 101, "bucket": "month"}),
    ("domain_timeseries", {"domain": "reddit.com", "window": "1h"}),
    ("geo_heat", {"level": "Country"}),
    ("trending", {"min_baseline": -1, "metric": "users"}),
    ("trending", {"min_baseline": "nan"}),
    ("keyword_activity", {"type": "add", "limit": -3}),
    ("query", {}),
    ("query", {"window": "7d", "group_by": ["time"]}),
    ("query", {"window": "7d", "group_by": ["keyword", "keyword"]}),
    ("query", {"window": "7d", "group_by": ["a", "b", "c", "d", "e", "f"]}),
    ("query", {"window": "7d", "filters": {"countrys": ["US"], "platforms": ["chrome", "fax"]}}),
    ("query", {"window": "7d", "filters": {"keywords": []}, "limit": 1001, "order": "up"}),
    ("query", {"window": "7d", "limit": 2.5, "format": "xml", "groupby": ["keyword"]}),
    ("query", {"window": "7d", "filters": {"countries": ["USA"], "cities": [5368361]}}),
    ("query", {"window": 7, "group_by": "keyword"}),
    ("account", {"plan": "x"}),
    ("geo_heat", {"intervals": "yes"}),
    ("top_keywords", {"compare": "previous", "intervals": 1}),
    ("query", {"window": "7d", "intervals": "true", "compare": "last_week"}),
]


@pytest.mark.parametrize("name, arguments", INVALID)
def test_invalid_arguments_are_refused_before_any_request_in_the_apis_words(connect, api_app, keys, name, arguments):
    client = connect(keys["professional"])
    assert client.operations  # the document is read once, first
    sent_before = len(client.recorder.requests)
    with pytest.raises(SignalsError) as refused:
        client.call(name, arguments)
    assert len(client.recorder.requests) == sent_before, "nothing was sent"
    error = refused.value
    assert error.sent is False and error.status == 400

    operation = client.operation(name)
    if operation.in_body:
        answer = raw(api_app, keys["professional"], "POST", operation.path, body=arguments)
    else:
        answer = raw(api_app, keys["professional"], "GET", operation.path, params=arguments)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert error.errors == problem["errors"]
    assert (error.title, error.detail) == (problem["title"], problem["detail"])
    # one shape: the client's problem is the API's, but for what only the server knows
    assert error.problem == {k: v for k, v in problem.items() if k not in ("request_id", "disclaimer")}


def test_compare_and_intervals_reach_the_client_and_its_frames(connect, api_app, keys):
    client = connect(keys["professional"])
    arguments = dict(window="24h", level="country", compare="previous_period", intervals=True)
    body = client.geo_heat(**arguments)
    expected = raw(api_app, keys["professional"], "GET", client.operation("geo_heat").path,
                   params={**arguments, "intervals": "true"})
    assert body == expected.json() and body["regions"]
    assert {"previous", "change", "intervals"} <= set(body["regions"][0])
    frame = client.geo_heat(**arguments, frame=True)
    assert frame.height == len(body["regions"]) and isinstance(frame.schema["previous"], pl.Struct)


def test_none_means_the_apis_default(connect, keys):
    client = connect(keys["observer"])
    assert client.top_keywords() == client.top_keywords(window=None, limit=None)
    assert "window" not in str(client.recorder.requests[-1].url)


# -- headers, auth, plans ----------------------------------------------------------------

def test_sends_bearer_user_agent_and_has_timeouts(connect, keys):
    client = connect(keys["observer"], timeout=7.0, connect_timeout=2.0)
    client.top_keywords()
    document_request, request = client.recorder.requests
    assert "authorization" not in document_request.headers  # the document is public
    assert request.headers["authorization"] == f"Bearer {keys['observer']}"
    assert request.headers["user-agent"] == USER_AGENT
    assert USER_AGENT.startswith(f"signals-python-client/{__version__} ")
    timeout = request.extensions["timeout"]
    assert (timeout["connect"], timeout["read"]) == (2.0, 7.0)


def test_401_and_403_are_signals_errors_with_the_problem(connect, keys):
    with pytest.raises(SignalsError) as unauthorised:
        connect("sig_live_" + "x" * 40).top_keywords()
    assert unauthorised.value.status == 401 and unauthorised.value.sent
    assert unauthorised.value.title == "Missing or invalid API key"
    assert unauthorised.value.request_id

    with pytest.raises(SignalsError) as no_key:
        connect(None).top_keywords()
    assert no_key.value.status == 401 and "Authorization" in no_key.value.detail

    client = connect(keys["observer"])
    with pytest.raises(SignalsError) as forbidden:
        client.query(window="7d")
    assert forbidden.value.status == 403
    assert "Analyst" in forbidden.value.detail and "Observer" in forbidden.value.detail
    assert len([r for r in client.recorder.requests if r.url.path.endswith("/query")]) == 1  # not retried


def test_settings_come_from_the_environment():
    settings = ConnectorSettings.from_env({"SIGNALS_API_URL": "http://api.example:9000/", "SIGNALS_API_KEY": "k"})
    assert (settings.api_url, settings.api_key) == ("http://api.example:9000/", "k")
    assert ConnectorSettings.from_env({}).api_url == "http://127.0.0.1:8000"
    client = SignalsClient(settings=settings)
    assert client.base_url == "http://api.example:9000" and client._api_key == "k"
    client.close()


# -- 429: Retry-After honoured, up to a cap --------------------------------------------------

def test_429_waits_retry_after_then_succeeds(connect, keys, ticker):
    client = connect(keys["observer"])  # 30 requests a minute
    for _ in range(30):
        client.geo_heat(window="24h")
        ticker.now += 1  # one a second: the first leaves the window 30 s after the last
    assert ticker.sleeps == []
    body = client.top_keywords(window="7d")
    assert body["keywords"]
    assert client.recorder.statuses[-2:] == [429, 200]
    assert len(ticker.sleeps) == 1 and 1 <= ticker.sleeps[0] <= 60
    assert ticker.sleeps[0] == int(ticker.sleeps[0])  # whole seconds, as sent


def test_429_beyond_the_cap_is_raised_without_waiting(connect, keys, ticker):
    client = connect(keys["observer"], max_rate_limit_wait=5)
    for _ in range(30):
        client.geo_heat(window="24h")
    with pytest.raises(SignalsError) as limited:
        client.top_keywords()
    assert limited.value.status == 429 and limited.value.retry_after == 60
    assert "30 requests per minute" in limited.value.detail
    assert ticker.sleeps == []


# -- 304 -------------------------------------------------------------------------------------

def test_etag_sent_back_and_304_returns_the_remembered_body(connect, keys):
    client = connect(keys["observer"])
    first = client.fetch("top_keywords", {"window": "7d", "limit": 3})
    assert first.status == 200 and first.etag and first.as_of.isoformat() == "2026-03-10T12:00:00+00:00"
    second = client.fetch("top_keywords", {"window": "7d", "limit": 3})
    assert client.recorder.requests[-1].headers["if-none-match"] == first.etag
    assert client.recorder.statuses[-1] == 304
    assert second.not_modified and second.body == first.body and second.etag == first.etag
    second.body["keywords"].clear()  # a copy: the remembered body is not changed by the caller
    assert client.top_keywords(window="7d", limit=3) == first.body
    # an ETag from elsewhere (the Sheets connector keeps it in the sheet): 304 without a body
    fresh = connect(keys["observer"])
    known = fresh.fetch("top_keywords", {"window": "7d", "limit": 3}, etag=first.etag)
    assert known.not_modified and known.body is None
    changed = fresh.fetch("top_keywords", {"window": "7d", "limit": 4}, etag=first.etag)
    assert changed.status == 200 and len(changed.body["keywords"]) == 4


# -- retries over real HTTP --------------------------------------------------------------------

@pytest.fixture
def front(api_app):
    with serve(api_app) as url:
        flaky = FlakyFront(url)
        yield flaky
        flaky.close()


def test_dropped_connections_and_503_are_retried_with_backoff(front, keys):
    sleeps: list[float] = []
    with SignalsClient(front.url, keys["observer"], sleep=sleeps.append, backoff=0.25) as client:
        assert client.operations
        front.plan = ["drop", "503", "drop"]
        body = client.top_keywords(window="7d", limit=2)
    assert len(body["keywords"]) == 2
    assert front.seen[-4:] == ["drop", "503", "drop", "relay"]
    assert len(sleeps) == 3
    assert sleeps[1] == 1.0  # the 503's Retry-After
    assert 0 < sleeps[0] <= 0.5 and 0 < sleeps[2] <= 8.0  # exponential backoff with jitter


def test_retries_give_up_after_max_retries(front, keys):
    sleeps: list[float] = []
    with SignalsClient(front.url, keys["observer"], sleep=sleeps.append, max_retries=2) as client:
        assert client.operations
        front.plan = ["drop"] * 3
        with pytest.raises(SignalsError) as dropped:
            client.top_keywords()
        assert dropped.value.status is None and "RemoteProtocolError" in dropped.value.detail
        assert len(sleeps) == 2
        front.plan = ["503"] * 3
        with pytest.raises(SignalsError) as unavailable:
            client.top_keywords()
        assert unavailable.value.status == 503 and unavailable.value.title == "Service unavailable"


def test_no_server_at_all_is_a_signals_error():
    with SignalsClient("http://127.0.0.1:9", "k", sleep=lambda s: None, max_retries=1) as client, \
            pytest.raises(SignalsError) as unreachable:
        client.top_keywords()
    assert unreachable.value.status is None and "ConnectError" in unreachable.value.detail
    assert unreachable.value.problem == {"type": "urn:signals:problem:unreachable", "title": "Cannot reach the Signals API",
                                         "status": None, "detail": unreachable.value.detail}


def test_document_parses_into_operations():
    operations = Operations.from_openapi(build_openapi())
    assert set(operations) == {*(p.strip("/").replace("-", "_") for p in GET_ENDPOINTS), "query", "account"}
    assert operations["query"].in_body and not operations["top_keywords"].in_body
    assert operations["keyword_timeseries"].timestamp_fields == ("ts",)
    assert operations["top_keywords"].path == BASE + "/top-keywords"


@pytest.mark.process
def test_every_method_over_the_real_gunicorn(tmp_path):
    from tests.support.fixture_data import write_fixture_store
    from tests.support.processes import create_key, gunicorn

    write_fixture_store(tmp_path)
    key = create_key(tmp_path, "analyst")
    with gunicorn(tmp_path) as (base, log), SignalsClient(base, key) as api:
        account = api.account()
        assert account["plan"] == "analyst" and len(account["endpoints"]) == 7
        for name, arguments in CALLS.items():
            body = getattr(api, name)(**arguments)
            assert isinstance(body[api.operation(name).records_field], list) and body["disclaimer"]
            assert isinstance(getattr(api, name)(**arguments, frame=True), pl.DataFrame)
        assert api.fetch("top_keywords", CALLS["top_keywords"]).not_modified  # the ETag went back: 304
        with pytest.raises(SignalsError) as refused:
            api.top_keywords(limit=0)
        assert not refused.value.sent
    assert key not in log[0]
