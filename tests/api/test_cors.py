"""CORS on every API path (issue 51, service/http/middleware/cors.py): preflights answered 204
without a key; every answer to a request with an Origin, errors included, readable by the page
(Access-Control-Allow-Origin, Expose-Headers); no credentials mode. Tokens themselves:
tests/api/test_tokens.py."""

from __future__ import annotations

import json

import falcon.testing
import pytest

from cache import LocalGate
from service.api.operations import OPERATIONS
from service.app import create_app
from service.clock import FixedClock
from service.engine.polars import PolarsEngine
from service.privacy import Privacy
from service.settings import Settings, SettingsError
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.http import assert_problem
from tests.support.secret import TEST_SECRET
from tests.support.spec_table import BASE

ORIGIN = "https://app.example.com"
EXPOSED = {"ETag", "Link", "Retry-After", "RateLimit", "RateLimit-Policy", "Signals-Total-Rows",
           "Signals-Privacy-Budget", "X-Signals-As-Of", "Content-Disposition", "X-Request-ID"}
PREFLIGHT = {"Origin": ORIGIN, "Access-Control-Request-Method": "GET",
             "Access-Control-Request-Headers": "authorization, if-none-match"}
API_PATHS = sorted({o.path.replace("{webhook_id}", "wh_1") for o in OPERATIONS} | {"/api/v1/openapi"})


def token_for(client, key: str, **fields) -> str:
    result = client.simulate_post("/api/v1/tokens", body=json.dumps({"origins": [ORIGIN], **fields}),
                                  headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    assert result.status_code == 201, result.text
    return result.json["token"]


def from_page(token: str, origin: str = ORIGIN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Origin": origin}


def vary(result: falcon.testing.Result) -> set[str]:
    return {part.strip() for part in result.headers.get("vary", "").split(",")}


def assert_readable(result: falcon.testing.Result, origin: str = ORIGIN) -> None:
    """What a page's script may read of this answer: all of it, and the headers it needs."""
    assert result.headers["access-control-allow-origin"] == origin
    assert {h.strip() for h in result.headers["access-control-expose-headers"].split(",")} >= EXPOSED
    assert "Origin" in vary(result)
    assert "access-control-allow-credentials" not in result.headers  # a bearer token is not a cookie


# -- preflights ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", API_PATHS)
def test_a_preflight_is_204_without_a_key_on_every_api_path(client, path):
    result = client.simulate_options(path, headers=PREFLIGHT)
    assert result.status_code == 204, (path, result.text)
    assert result.content == b""
    assert result.headers["access-control-allow-origin"] == ORIGIN
    assert result.headers["access-control-allow-methods"] == "GET, POST"
    assert result.headers["access-control-allow-headers"] == "Authorization, Content-Type, If-None-Match"
    assert result.headers["access-control-max-age"] == "7200"
    assert "Origin" in vary(result)
    assert "access-control-allow-credentials" not in result.headers
    assert "www-authenticate" not in result.headers and "ratelimit" not in result.headers  # no key asked for


def test_a_preflight_for_a_post_with_a_json_body(client):
    result = client.simulate_options(BASE + "/query", headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert result.status_code == 204
    allowed = {h.strip().lower() for h in result.headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type"} <= allowed


def test_the_preflights_max_age_is_a_setting(fixture_data_dir, fixture_store, accounts):
    app = create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET, cors_max_age_seconds=600), clock=FixedClock(FIXTURE_NOW),
                     store=fixture_store, accounts=accounts, gate=LocalGate(), engine=PolarsEngine(Privacy.exact()))
    result = falcon.testing.TestClient(app).simulate_options(BASE + "/top-keywords", headers=PREFLIGHT)
    assert result.headers["access-control-max-age"] == "600"
    assert Settings.from_env({"SIGNALS_CORS_MAX_AGE_SECONDS": "0"}).cors_max_age_seconds == 0
    with pytest.raises(SettingsError, match="SIGNALS_CORS_MAX_AGE_SECONDS"):
        Settings.from_env({"SIGNALS_CORS_MAX_AGE_SECONDS": "86401"})


def test_options_without_the_preflight_headers_is_answered_as_before(client, keys):
    headers = {"Authorization": f"Bearer {keys['professional']}"}
    plain = client.simulate_options(BASE + "/top-keywords", headers=headers)
    assert plain.status_code == 200 and "OPTIONS" in plain.headers["allow"].split(", ")
    assert "access-control-allow-methods" not in plain.headers
    # An Origin alone is no preflight (nor is a request method alone): authentication as ever.
    assert client.simulate_options(BASE + "/top-keywords", headers={"Origin": ORIGIN}).status_code == 401
    assert client.simulate_options(BASE + "/top-keywords",
                                   headers={"Access-Control-Request-Method": "GET"}).status_code == 401


def test_paths_outside_the_api_have_no_cors(client):
    result = client.simulate_options("/healthz", headers=PREFLIGHT)
    assert result.status_code == 200 and "access-control-allow-origin" not in result.headers
    assert "access-control-allow-origin" not in client.simulate_get("/healthz", headers={"Origin": ORIGIN}).headers


def test_an_unknown_api_path_stays_404_and_readable(client):
    result = client.simulate_options(BASE + "/nothing-here", headers=PREFLIGHT)
    assert_problem(result, 404)
    assert_readable(result)


# -- actual answers -----------------------------------------------------------------------------

def test_an_answer_to_a_token_is_readable_by_its_page(client, keys):
    token = token_for(client, keys["observer"])
    result = client.simulate_get(BASE + "/top-keywords", query_string="window=7d&limit=3", headers=from_page(token))
    assert result.status_code == 200
    assert_readable(result)
    assert {"Authorization", "Origin"} <= vary(result)
    again = client.simulate_get(BASE + "/top-keywords", query_string="window=7d&limit=3",
                                headers={**from_page(token), "If-None-Match": result.headers["etag"]})
    assert again.status_code == 304
    assert_readable(again)


def test_a_csv_answer_exposes_its_file_name(client, keys):
    token = token_for(client, keys["analyst"], endpoints=["query"])
    result = client.simulate_post(BASE + "/query", body=json.dumps({"window": "7d", "group_by": ["country"],
                                                                     "format": "csv"}),
                                  headers={**from_page(token), "Content-Type": "application/json"})
    assert result.status_code == 200 and result.headers["content-disposition"].startswith("attachment")
    assert_readable(result)


def test_an_answer_without_an_origin_says_it_varies_by_origin(client, keys):
    result = client.simulate_get(BASE + "/top-keywords", headers={"Authorization": f"Bearer {keys['observer']}"})
    assert result.status_code == 200
    assert "access-control-allow-origin" not in result.headers and "Origin" in vary(result)


def test_the_public_document_is_readable_from_any_page(client):
    result = client.simulate_get("/api/v1/openapi", headers={"Origin": "https://docs.example.org"})
    assert result.status_code == 200
    assert_readable(result, "https://docs.example.org")


def test_a_401_is_readable(client, keys):
    missing = client.simulate_get(BASE + "/top-keywords", headers={"Origin": ORIGIN})
    assert_problem(missing, 401)
    assert_readable(missing)
    bad = client.simulate_get(BASE + "/top-keywords", headers=from_page("eyJhbGciOiJIUzI1NiJ9.eyJ4IjoxfQ.c2ln"))
    assert_problem(bad, 401)
    assert_readable(bad)
    assert "www-authenticate" in bad.headers


def test_a_403_is_readable(client, keys):
    token = token_for(client, keys["observer"], endpoints=["top_keywords"])
    for result in (
        client.simulate_get(BASE + "/geo-heat", headers=from_page(token)),  # outside its endpoints
        client.simulate_get(BASE + "/top-keywords", headers=from_page(token, "https://evil.example")),  # another page
        client.simulate_get(BASE + "/top-keywords", headers=from_page(keys["observer"])),  # a key in a page
    ):
        assert_problem(result, 403)
        origin = result.headers["access-control-allow-origin"]  # the page that asked reads why
        assert_readable(result, origin)


def test_a_400_is_readable(client, keys):
    token = token_for(client, keys["observer"], fixed={"window": "7d"})
    result = client.simulate_get(BASE + "/top-keywords", query_string="window=24h", headers=from_page(token))
    assert_problem(result, 400, "window")
    assert_readable(result)


def test_a_429_is_readable_with_its_retry_after(client, keys):
    token = token_for(client, keys["observer"])  # 1 of the Observer's 30 a minute
    for _ in range(29):
        assert client.simulate_get(BASE + "/top-keywords", headers=from_page(token)).status_code == 200
    refused = client.simulate_get(BASE + "/top-keywords", headers=from_page(token))
    assert_problem(refused, 429)
    assert_readable(refused)
    assert int(refused.headers["retry-after"]) >= 1
    assert "Retry-After" in refused.headers["access-control-expose-headers"]
