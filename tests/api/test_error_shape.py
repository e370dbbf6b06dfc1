"""One error shape everywhere: every failing request on every endpoint is problem+json."""

from __future__ import annotations

import pytest

from tests.support.http import assert_problem, get
from tests.support.secret import TEST_SECRET
from tests.support.spec_table import BASE, GET_ENDPOINTS

ALL_PATHS = [*GET_ENDPOINTS, "/query"]


@pytest.mark.parametrize("path", ALL_PATHS)
def test_wrong_method_is_405_with_allow(client, keys, path):
    other = client.simulate_delete if path != "/query" else client.simulate_get
    result = other(BASE + path, headers={"Authorization": f"Bearer {keys['professional']}"})
    assert_problem(result, 405)
    assert ("POST" if path == "/query" else "GET") in result.headers["allow"]


def test_unknown_path_is_404_problem(client, keys):
    assert_problem(get(client, "/no-such-endpoint", keys["observer"]), 404)
    assert_problem(client.simulate_get("/nowhere"), 404)


@pytest.mark.parametrize("path", list(GET_ENDPOINTS))
@pytest.mark.parametrize("query", [
    "window=%00", "limit=%F0%9F%92%A9", "window=" + "9" * 4000, "keyword=%ff%fe", "a=%zz", "=x", "&&&",
    "window[]=24h", "limit=1e3", "limit=0x10",
])
def test_hostile_query_strings_never_500(client, keys, path, query):
    result = get(client, path, keys["observer"], query)
    assert result.status_code in (200, 400), (result.status_code, result.text)
    if result.status_code == 400:
        assert_problem(result, 400)


def test_request_id_is_echoed_and_generated(client, keys):
    result = get(client, "/top-keywords", None, headers={"X-Request-ID": "abcdef12-trace"})
    assert result.headers["x-request-id"] == "abcdef12-trace"
    assert result.json["request_id"] == "abcdef12-trace"
    generated = get(client, "/top-keywords", None, headers={"X-Request-ID": "bad id with spaces"})
    assert generated.headers["x-request-id"] != "bad id with spaces"
    assert len(generated.headers["x-request-id"]) == 32


def test_unexpected_errors_are_500_problems_without_internals(fixture_data_dir, fixture_store, accounts, keys):
    import falcon.testing

    from service.app import create_app
    from service.clock import FixedClock
    from service.settings import Settings
    from tests.support.fixture_data import FIXTURE_NOW

    class BrokenEngine:
        def __getattr__(self, name):
            def fail(*args, **kwargs):
                raise RuntimeError("secret internal detail")
            return fail

    app = create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=FixedClock(FIXTURE_NOW), store=fixture_store,
                     accounts=accounts, engine=BrokenEngine())
    result = get(falcon.testing.TestClient(app), "/top-keywords", keys["observer"])
    body = assert_problem(result, 500)
    assert "secret internal detail" not in result.text and body["request_id"]
