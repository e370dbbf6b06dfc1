"""Browser tokens (issue 51): POST /api/v1/tokens mints them with a subscription's key; a token acts
for the key's subscription only from its origins, on its endpoints, with its fixed parameters,
until it expires and while its key works. Keys are refused from web pages. The CORS side is
tests/api/test_cors.py."""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid

import falcon.testing
import jwt
import pytest
import sqlalchemy as sa

from cache import LocalGate
from service.accounts import AccountStore, AuthFailure
from service.accounts.cached import CachedAuthenticator
from service.accounts.tokens import TOKEN_KEY_LABEL, BrowserToken, TokenSigner, key_binding, looks_like_token
from service.api.endpoints import ENDPOINTS
from service.api.tiers import Tier
from service.api.token_fields import origin_problem
from service.app import create_app
from service.clock import FixedClock
from service.engine.polars import PolarsEngine
from service.privacy import Privacy
from service.settings import Settings
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.http import assert_problem
from tests.support.secret import TEST_SECRET
from tests.support.spec_table import BASE

TOKENS = "/api/v1/tokens"
ORIGIN = "https://app.example.com"
GETS = [e.name for e in ENDPOINTS if e.method == "GET"]


def mint(client, key: str, body: object, headers: dict | None = None) -> falcon.testing.Result:
    return client.simulate_post(TOKENS, body=json.dumps(body), headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json", **(headers or {})})


def token_for(client, key: str, **fields) -> str:
    result = mint(client, key, {"origins": [ORIGIN], **fields})
    assert result.status_code == 201, result.text
    return result.json["token"]


def call(client, token: str, path: str, query: str = "", origin: str | None = ORIGIN, headers: dict | None = None,
         body: object = None) -> falcon.testing.Result:
    sent = {"Authorization": f"Bearer {token}", **({"Origin": origin} if origin else {}), **(headers or {})}
    if body is not None:
        return client.simulate_post(BASE + path, body=json.dumps(body), headers={**sent,
                                                                                "Content-Type": "application/json"})
    return client.simulate_get(path if path.startswith("/api/v1/") and not path.startswith(BASE) else BASE + path,
                               query_string=query, headers=sent)


def key_get(client, key: str, path: str, query: str = "") -> falcon.testing.Result:
    return client.simulate_get(BASE + path, query_string=query, headers={"Authorization": f"Bearer {key}"})


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(FIXTURE_NOW)


@pytest.fixture
def clocked(fixture_data_dir, fixture_store, accounts, clock) -> falcon.testing.TestClient:
    """The app of the conftest's `client`, on a clock the test moves."""
    return falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=clock, store=fixture_store,
                                                accounts=accounts, gate=LocalGate(),
                                                engine=PolarsEngine(Privacy.exact())))


# -- minting ------------------------------------------------------------------------------------

def test_a_token_is_minted_with_its_defaults(client, keys):
    result = mint(client, keys["observer"], {"origins": [ORIGIN, "http://localhost:5173"]})
    assert result.status_code == 201, result.text
    body = result.json
    assert list(body) == ["token", "expires_at", "origins", "endpoints", "fixed"]
    assert body["origins"] == [ORIGIN, "http://localhost:5173"]
    assert body["endpoints"] == GETS  # every endpoint the Observer plan allows, in the table's order
    assert body["fixed"] == {}
    assert body["expires_at"] == "2026-03-10T13:34:56Z"  # the app's clock + 3,600 s
    assert looks_like_token(body["token"])
    assert result.headers["cache-control"] == "no-store"
    assert result.headers["ratelimit-policy"] == '"observer";q=30;w=60'  # minting is an authenticated request
    # An Analyst's plan adds /query.
    analyst = mint(client, keys["analyst"], {"origins": [ORIGIN]})
    assert analyst.json["endpoints"] == [e.name for e in ENDPOINTS]


def test_what_is_asked_is_what_the_token_holds(client, keys):
    result = mint(client, keys["analyst"], {"origins": [ORIGIN], "ttl_seconds": 60, "endpoints": ["query", "geo_heat"],
                                            "fixed": {"window": "7d", "compare": "previous_period"}})
    assert result.status_code == 201, result.text
    body = result.json
    assert body["expires_at"] == "2026-03-10T12:35:56Z"
    assert body["endpoints"] == ["query", "geo_heat"] and body["fixed"] == {"window": "7d", "compare": "previous_period"}
    claims = jwt.decode(body["token"], options={"verify_signature": False})
    assert claims["origins"] == [ORIGIN] and claims["endpoints"] == ["query", "geo_heat"]
    assert claims["exp"] - claims["iat"] == 60 and isinstance(claims["key"], int)
    assert keys["analyst"] not in body["token"]  # nothing of the key itself


@pytest.mark.parametrize(("body", "names"), [
    ({}, ["origins"]),
    ({"origins": []}, ["origins"]),
    ({"origins": "https://app.example.com"}, ["origins"]),
    ({"origins": [ORIGIN, ORIGIN]}, ["origins"]),
    ({"origins": [f"https://a{i}.example.com" for i in range(11)]}, ["origins"]),
    ({"origins": ["https://app.example.com/"]}, ["origins[0]"]),
    ({"origins": [ORIGIN, "https://app.example.com/dashboard"]}, ["origins[1]"]),
    ({"origins": ["https://App.Example.com"]}, ["origins[0]"]),
    ({"origins": ["HTTPS://app.example.com"]}, ["origins[0]"]),
    ({"origins": ["ftp://app.example.com"]}, ["origins[0]"]),
    ({"origins": ["app.example.com"]}, ["origins[0]"]),
    ({"origins": ["https://app.example.com:443"]}, ["origins[0]"]),
    ({"origins": ["http://localhost:0"]}, ["origins[0]"]),
    ({"origins": ["http://localhost:65536"]}, ["origins[0]"]),
    ({"origins": ["https://*.example.com"]}, ["origins[0]"]),
    ({"origins": ["https://user@app.example.com"]}, ["origins[0]"]),
    ({"origins": ["null"]}, ["origins[0]"]),
    ({"origins": [" https://app.example.com"]}, ["origins[0]"]),
    ({"origins": ["https://bücher.example"]}, ["origins[0]"]),
    ({"origins": ["https://app.example.com?x=1"]}, ["origins[0]"]),
    ({"origins": [ORIGIN], "ttl_seconds": 59}, ["ttl_seconds"]),
    ({"origins": [ORIGIN], "ttl_seconds": 86_401}, ["ttl_seconds"]),
    ({"origins": [ORIGIN], "ttl_seconds": "3600"}, ["ttl_seconds"]),
    ({"origins": [ORIGIN], "ttl_seconds": 3600.5}, ["ttl_seconds"]),
    ({"origins": [ORIGIN], "ttl_seconds": None}, ["ttl_seconds"]),
    ({"origins": [ORIGIN], "endpoints": []}, ["endpoints"]),
    ({"origins": [ORIGIN], "endpoints": ["account"]}, ["endpoints[0]"]),
    ({"origins": [ORIGIN], "endpoints": ["top_keywords", "mint_token"]}, ["endpoints[1]"]),
    ({"origins": [ORIGIN], "endpoints": ["top_keywords", "top_keywords"]}, ["endpoints"]),
    ({"origins": [ORIGIN], "fixed": ["window"]}, ["fixed"]),
    ({"origins": [ORIGIN], "fixed": {"windw": "7d"}}, ["fixed.windw"]),
    ({"origins": [ORIGIN], "fixed": {"window": None}}, ["fixed.window"]),
    ({"origins": [ORIGIN], "fixed": {"limit": 0}}, ["fixed.limit"]),
    # a parameter of some endpoints only, or a value one of them does not take
    ({"origins": [ORIGIN], "fixed": {"level": "region"}}, ["fixed.level"]),
    ({"origins": [ORIGIN], "endpoints": ["top_keywords", "geo_heat"], "fixed": {"level": "city"}}, ["fixed.level"]),
    ({"origins": [ORIGIN], "endpoints": ["keyword_timeseries"], "fixed": {"window": "1h"}}, ["fixed.window"]),
    ({"origins": [ORIGIN], "endpoints": ["top_keywords"], "fixed": {"limit": 501}}, ["fixed.limit"]),
    ({"origins": ["x"], "ttl_seconds": 1, "endpoints": ["nope"], "extra": 1}, ["extra", "ttl_seconds",
                                                                               "endpoints[0]", "origins[0]"]),
])
def test_each_bad_input_is_a_400_naming_it(client, keys, body, names):
    problem = assert_problem(mint(client, keys["professional"], body), 400, *names)
    assert problem["type"] == "urn:signals:problem:invalid-request"


@pytest.mark.parametrize(("origin", "says"), [
    ("https://app.example.com/", "https://app.example.com"), ("https://App.example.com", "app.example.com"),
    ("https://x.org:443", "https://x.org"), ("http://x.org:80", "http://x.org"), ("ftp://x.org", "http or https"),
    ("https://x.org/app", "path"), ("x.org", "scheme://host"), ("https://[::01]", "[::1]"),
])
def test_an_origin_refused_says_how_a_browser_writes_it(origin, says):
    assert says in origin_problem(origin)


@pytest.mark.parametrize("origin", ["https://app.example.com", "http://localhost:5173", "http://127.0.0.1:8080",
                                    "https://xn--bcher-kva.example", "http://[::1]:3000", "https://a-b.c.d.example"])
def test_origins_as_browsers_send_them_are_taken(origin):
    assert origin_problem(origin) is None


def test_a_body_that_is_not_json_is_refused_as_everywhere(client, keys):
    headers = {"Authorization": f"Bearer {keys['observer']}"}
    assert_problem(client.simulate_post(TOKENS, body="origins=x", headers={**headers, "Content-Type": "text/plain"}),
                   415)
    assert_problem(client.simulate_post(TOKENS, body="{", headers={**headers, "Content-Type": "application/json"}),
                   400, "body")
    assert_problem(mint(client, keys["observer"], ["https://app.example.com"]), 400, "body")
    assert_problem(client.simulate_post(TOKENS, body="", headers={**headers, "Content-Type": "application/json"}),
                   400, "body")


def test_an_endpoint_the_plan_lacks_is_403_naming_it(client, keys):
    problem = assert_problem(mint(client, keys["observer"], {"origins": [ORIGIN], "endpoints": ["top_keywords", "query"]}),
                             403, "endpoints[1]")
    assert problem["type"] == "urn:signals:problem:insufficient-tier"
    assert "query" in problem["detail"] and "Observer" in problem["detail"]
    assert "Analyst" in problem["errors"][0]["reason"]


def test_minting_needs_a_key(client, keys):
    missing = client.simulate_post(TOKENS, body=json.dumps({"origins": [ORIGIN]}),
                                   headers={"Content-Type": "application/json"})
    assert_problem(missing, 401)
    assert missing.headers["www-authenticate"].startswith("Bearer")


def test_a_token_cannot_mint_a_token(client, keys):
    token = token_for(client, keys["professional"])
    problem = assert_problem(mint(client, token, {"origins": [ORIGIN]}, headers={"Origin": ORIGIN}), 403)
    assert problem["type"] == "urn:signals:problem:credential-not-allowed" and "cannot mint" in problem["detail"]
    assert_problem(mint(client, token, {"origins": [ORIGIN]}), 403)  # from a server: no Origin, still a token


def test_a_key_cannot_mint_from_a_web_page(client, keys):
    problem = assert_problem(mint(client, keys["professional"], {"origins": [ORIGIN]}, headers={"Origin": ORIGIN}), 403)
    assert "keys are for servers; mint a token at POST /api/v1/tokens" in problem["detail"]


def test_a_token_never_outlives_its_key(fixture_data_dir, fixture_store, tmp_path, clock):
    store = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}", clock=clock)
    client = falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=clock, store=fixture_store,
                                                  accounts=store, gate=LocalGate(),
                                                  engine=PolarsEngine(Privacy.exact())))
    key, _ = store.create_key(Tier.OBSERVER, expires_at=FIXTURE_NOW + dt.timedelta(seconds=600))
    result = mint(client, key, {"origins": [ORIGIN], "ttl_seconds": 3600})
    assert result.json["expires_at"] == "2026-03-10T12:44:56Z"  # the key's expiry, not an hour
    token = result.json["token"]
    assert call(client, token, "/top-keywords").status_code == 200
    clock.advance(dt.timedelta(seconds=601))
    assert_problem(call(client, token, "/top-keywords"), 401)
    store.close()


def test_a_token_too_long_for_a_header_is_refused(client, keys):
    origins = [f"https://{'a' * 60}.{'b' * 60}.{'c' * 60}.{'d' * 60}{i}.example" for i in range(10)]
    problem = assert_problem(mint(client, keys["analyst"], {"origins": origins, "endpoints": ["query"], "fixed": {
        "filters": {"keywords": [f"keyword number {i:03}" for i in range(50)]}}}), 400, "fixed")
    assert "4,096" in problem["detail"]


# -- using a token ------------------------------------------------------------------------------

def test_a_token_answers_its_endpoint_as_the_key_does(client, keys):
    token = token_for(client, keys["observer"])
    with_token = call(client, token, "/top-keywords", "window=7d&limit=3")
    assert with_token.status_code == 200, with_token.text
    with_key = key_get(client, keys["observer"], "/top-keywords", "window=7d&limit=3")
    assert with_token.content == with_key.content and with_token.headers["etag"] == with_key.headers["etag"]
    assert with_key.headers["x-cache"] == "hit"  # one answer, one cache entry, whoever asks


def test_a_token_for_query_posts_its_body(client, keys):
    token = token_for(client, keys["analyst"], endpoints=["query"])
    result = call(client, token, "/query", body={"window": "7d", "group_by": ["country"]})
    assert result.status_code == 200 and result.json["results"]


def test_outside_its_endpoints_a_token_is_403(client, keys):
    token = token_for(client, keys["professional"], endpoints=["top_keywords"])
    for path in ("/geo-heat", "/trending"):
        problem = assert_problem(call(client, token, path), 403)
        assert problem["type"] == "urn:signals:problem:credential-not-allowed" and "top_keywords" in problem["detail"]
    assert_problem(call(client, token, "/query", body={"window": "7d"}), 403)
    for path in ("/api/v1/account", "/api/v1/account/webhooks"):  # management takes the key itself
        assert_problem(call(client, token, path), 403)


def test_a_fixed_parameter_a_request_contradicts_is_400_naming_it(client, keys):
    token = token_for(client, keys["analyst"], endpoints=["top_keywords", "query"], fixed={"window": "7d", "limit": 10})
    problem = assert_problem(call(client, token, "/top-keywords", "window=24h"), 400, "window")
    assert "fixed to 7d" in problem["detail"]
    assert_problem(call(client, token, "/top-keywords", "window=7d&limit=11"), 400, "limit")
    assert_problem(call(client, token, "/top-keywords", "window=7d&window=7d"), 400, "window")  # repeated
    assert_problem(call(client, token, "/top-keywords", "limit=ten"), 400, "limit")
    assert_problem(call(client, token, "/query", body={"window": "30d"}), 400, "window")
    assert_problem(call(client, token, "/query", body={"limit": "10"}), 400, "limit")
    # The same value, as the endpoint reads it, is no contradiction.
    assert call(client, token, "/top-keywords", "window=7d&limit=10").status_code == 200
    assert call(client, token, "/top-keywords", "limit=10.0").status_code == 400  # not an integer in a query string
    assert call(client, token, "/query", body={"window": "7d", "limit": 10.0}).status_code == 200


def test_a_fixed_keyword_is_compared_as_the_endpoint_normalises_it(client, keys):
    token = token_for(client, keys["observer"], endpoints=["keyword_timeseries"], fixed={"keyword": "Snakes"})
    assert call(client, token, "/keyword-timeseries", "keyword=SNAKES").status_code == 200
    assert_problem(call(client, token, "/keyword-timeseries", "keyword=crypto"), 400, "keyword")


def test_an_absent_fixed_parameter_takes_the_fixed_value(client, keys):
    token = token_for(client, keys["analyst"], fixed={"window": "7d"})
    result = call(client, token, "/top-keywords", "limit=3")
    assert result.status_code == 200 and result.json["window"] == "7d"
    assert result.content == key_get(client, keys["analyst"], "/top-keywords", "limit=3&window=7d").content
    assert "window=7d" in result.headers["link"]  # the next page is the request as it was answered
    assert call(client, token, "/top-keywords").json["window"] == "7d"
    body = call(client, token, "/query", body={"group_by": ["country"]})
    assert body.status_code == 200 and body.json["window"] == "7d"  # a required field, supplied by the token


def test_an_expired_token_is_401_saying_so(clocked, clock, keys):
    token = token_for(clocked, keys["observer"], ttl_seconds=60)
    assert call(clocked, token, "/top-keywords").status_code == 200
    clock.advance(dt.timedelta(seconds=59))
    assert call(clocked, token, "/top-keywords").status_code == 200
    clock.advance(dt.timedelta(seconds=1))  # at expires_at: no longer
    result = call(clocked, token, "/top-keywords")
    problem = assert_problem(result, 401)
    assert "expired at 2026-03-10T12:35:56Z" in problem["detail"] and "POST /api/v1/tokens" in problem["detail"]
    assert result.headers["www-authenticate"] == ('Bearer realm="signals", error="invalid_token", '
                                                  'error_description="The token expired"')


@pytest.mark.parametrize("origin", [None, "https://evil.example", "https://app.example.com:8443", "http://app.example.com"])
def test_from_another_origin_or_none_a_token_is_403(client, keys, origin):
    token = token_for(client, keys["observer"])
    result = call(client, token, "/top-keywords", origin=origin)
    problem = assert_problem(result, 403)
    assert ORIGIN in problem["detail"] and problem["type"] == "urn:signals:problem:credential-not-allowed"
    assert result.headers["ratelimit-policy"] == '"observer";q=30;w=60'  # as every authenticated answer


def test_a_key_sent_with_an_origin_is_403(client, keys):
    result = client.simulate_get(BASE + "/top-keywords", headers={"Authorization": f"Bearer {keys['observer']}",
                                                                  "Origin": ORIGIN})
    problem = assert_problem(result, 403)
    assert "keys are for servers; mint a token at POST /api/v1/tokens" in problem["detail"]
    assert problem["type"] == "urn:signals:problem:credential-not-allowed"
    assert result.headers["ratelimit-policy"] == '"observer";q=30;w=60'
    # Without an Origin (a server), the same key is served.
    assert key_get(client, keys["observer"], "/top-keywords").status_code == 200


def test_a_revoked_keys_token_is_401(client, accounts):
    key, _ = accounts.create_key(Tier.OBSERVER, subscription=f"revoked-{uuid.uuid4().hex[:8]}")
    token = token_for(client, key)
    accounts.revoke(key)
    problem = assert_problem(call(client, token, "/top-keywords"), 401)
    assert "revoked" in problem["detail"]


def test_a_token_in_use_stops_within_the_key_cache_time_once_its_key_is_revoked(accounts):
    timer = [0.0]
    cached = CachedAuthenticator(accounts, ttl_seconds=10, timer=lambda: timer[0])
    key, _ = accounts.create_key(Tier.OBSERVER)
    key_id = cached.authenticate(key).key_id
    assert cached.authenticate_key_id(key_id).tier is Tier.OBSERVER
    accounts.revoke(key)
    timer[0] = 4.0
    assert cached.authenticate_key_id(key_id).tier is Tier.OBSERVER  # remembered, as a key is
    timer[0] = 10.5
    assert cached.authenticate_key_id(key_id) is AuthFailure.REVOKED
    assert cached.authenticate_key_id(10**9) is AuthFailure.UNKNOWN


def test_a_tokens_key_is_checked_in_the_same_batches_as_keys(accounts):
    queries: list[list] = []

    class Counting:
        clock = accounts.clock

        def authenticate(self, presented):
            return accounts.authenticate(presented)

        def authenticate_refs(self, refs):
            queries.append(list(refs))
            return accounts.authenticate_refs(refs)

    timer = [0.0]
    cached = CachedAuthenticator(Counting(), ttl_seconds=10, timer=lambda: timer[0])  # type: ignore[arg-type]
    minting, other = (accounts.create_key(Tier.ANALYST)[0] for _ in range(2))
    key_id = accounts.authenticate(minting).key_id
    cached.authenticate_key_id(key_id)
    timer[0] = 6.0
    cached.authenticate_key_id(key_id)  # in use
    cached.authenticate(other)  # its lookup takes the token's key along: one query for both
    from service.accounts import hash_key
    assert queries == [[key_id], [hash_key(other), key_id]]


def test_a_token_costs_no_database_read_once_its_key_is_remembered(client, keys, accounts):
    token = token_for(client, keys["observer"])
    assert call(client, token, "/top-keywords").status_code == 200  # its key looked up once, by id
    statements: list[str] = []

    def record(conn, cursor, statement, *args):
        statements.append(statement)

    sa.event.listen(accounts.db_engine, "before_cursor_execute", record)
    try:
        for query in ("", "window=7d", "limit=3"):
            assert call(client, token, "/top-keywords", query).status_code == 200
    finally:
        sa.event.remove(accounts.db_engine, "before_cursor_execute", record)
    assert statements == []


@pytest.mark.parametrize("tamper", ["signature", "secret", "binding", "payload", "alg-none", "shape"])
def test_a_token_not_ours_is_401(client, keys, tamper):
    token = token_for(client, keys["observer"])
    header, payload, signature = token.split(".")
    claims = jwt.decode(token, options={"verify_signature": False})
    if tamper == "signature":
        forged = f"{header}.{payload}.{signature[:-2]}AA"
    elif tamper == "secret":
        forged = TokenSigner("another secret").sign(BrowserToken(claims["key"], claims["kb"], (ORIGIN,), tuple(GETS),
                                                                 {}, FIXTURE_NOW, FIXTURE_NOW + dt.timedelta(hours=1)))
    elif tamper == "binding":  # signed with this deployment's secret (known here), without the key's hash
        forged = TokenSigner(TEST_SECRET).sign(BrowserToken(claims["key"], key_binding("0" * 64), (ORIGIN,),
                                                                  tuple(GETS), {}, FIXTURE_NOW,
                                                                  FIXTURE_NOW + dt.timedelta(hours=1)))
    elif tamper == "payload":
        other = jwt.encode({**claims, "endpoints": ["query"]}, "x" * 32, algorithm="HS256").split(".")[1]
        forged = f"{header}.{other}.{signature}"
    elif tamper == "alg-none":
        forged = jwt.encode(claims, None, algorithm="none")
    else:
        forged = f"{header}.{payload}"  # cut short: not a token's shape, read as a malformed key
    result = call(client, forged, "/top-keywords")
    assert_problem(result, 401)
    assert 'error="invalid_token"' in result.headers["www-authenticate"]


def test_the_signing_key_is_derived_from_the_secret_not_the_secret_itself(keys, client):
    token = token_for(client, keys["observer"])
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, TEST_SECRET, algorithms=["HS256"], audience="signals-api", options={"verify_exp": False})
    import hmac
    derived = hmac.digest(TEST_SECRET.encode(), TOKEN_KEY_LABEL, "sha256")
    assert jwt.decode(token, derived, algorithms=["HS256"], audience="signals-api", options={"verify_exp": False})["origins"] == [ORIGIN]


def test_wrong_tokens_count_against_the_address_like_wrong_keys(client, keys):
    token = token_for(client, keys["observer"])
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    statuses = [call(client, forged, "/top-keywords").status_code for _ in range(21)]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429
    assert call(client, token, "/top-keywords").status_code == 200  # a valid token is served meanwhile


# -- shared with the key's subscription --------------------------------------------------------------

def remaining(result: falcon.testing.Result) -> int:
    return int(result.headers["x-ratelimit-remaining"])


def test_the_rate_limit_is_the_keys_subscriptions(client, keys):
    key = keys["observer"]
    minted = mint(client, key, {"origins": [ORIGIN]})
    token = minted.json["token"]
    assert remaining(minted) == 29  # minting counted
    assert remaining(call(client, token, "/top-keywords")) == 28
    assert remaining(key_get(client, key, "/top-keywords")) == 27
    for _ in range(27):
        assert call(client, token, "/geo-heat").status_code == 200
    refused = call(client, token, "/top-keywords")
    problem = assert_problem(refused, 429)
    assert "Observer plan allows 30 requests per minute" in problem["detail"] and int(refused.headers["retry-after"]) >= 1
    assert key_get(client, key, "/top-keywords").status_code == 429  # the key's subscription is spent too
    assert mint(client, key, {"origins": [ORIGIN]}).status_code == 429  # and minting with it


def test_the_privacy_budget_is_the_keys_subscriptions(fixture_data_dir, fixture_store, accounts):
    from service.privacy.budget import HEADER

    client = falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret="tokens-budget"),
                                                  clock=FixedClock(FIXTURE_NOW), store=fixture_store,
                                                  accounts=accounts, gate=LocalGate()))  # the real privacy stage
    key, _ = accounts.create_key(Tier.OBSERVER, subscription=f"budget-{uuid.uuid4().hex[:8]}")

    def budget(result):
        return dict(part.strip().split("=", 1) for part in result.headers[HEADER.lower()].split(","))

    token = token_for(client, key)
    paid = budget(call(client, token, "/geo-heat", "window=7d"))
    assert float(paid["charged"]) > 0 and paid["spent"] == paid["charged"]
    again = budget(key_get(client, key, "/geo-heat", "window=7d"))  # the answer the token's page received
    assert float(again["charged"]) == 0 and again["spent"] == paid["spent"]
    account = client.simulate_get("/api/v1/account", headers={"Authorization": f"Bearer {key}"})
    assert budget(account)["spent"] == paid["spent"]


# -- never logged -------------------------------------------------------------------------------

def test_a_token_is_never_logged(client, keys, caplog, clocked, clock):
    caplog.set_level(logging.DEBUG)
    token = token_for(client, keys["observer"])
    call(client, token, "/top-keywords")
    call(client, token, "/top-keywords", origin="https://evil.example")
    call(client, token, "/geo-heat", "level=nowhere")
    call(client, token[:-3] + "abc", "/top-keywords")
    short = token_for(clocked, keys["analyst"], ttl_seconds=60)
    clock.advance(dt.timedelta(minutes=2))
    call(clocked, short, "/top-keywords")
    assert token not in caplog.text and short not in caplog.text
    assert keys["observer"] not in caplog.text


def test_the_log_handlers_redact_keys_and_tokens_whoever_logs_them(client, keys):
    from service.observability.logging_setup import RedactSecrets
    from service.server.gunicorn_logging import redact

    token = token_for(client, keys["observer"])
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "sent %s and %s", (token, keys["observer"]), None)
    assert RedactSecrets().filter(record) and record.getMessage() == "sent [redacted] and [redacted]"
    assert redact(f"/api/v1/signals/top-keywords?jwt={token}&limit=3") == "/api/v1/signals/top-keywords?jwt=[redacted]&limit=3"


# -- the document -------------------------------------------------------------------------------

def test_the_document_describes_minting(client):
    doc = client.simulate_get("/api/v1/openapi").json
    operation = doc["paths"][TOKENS]["post"]
    assert operation["operationId"] == "mint_token" and operation["tags"] == ["tokens"]
    assert operation["security"] == [{"bearerAuth": []}]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["origins"] and set(schema["properties"]) == {"origins", "ttl_seconds", "endpoints",
                                                                                 "fixed"}
    ttl = schema["properties"]["ttl_seconds"]
    assert (ttl["minimum"], ttl["maximum"], ttl["default"]) == (60, 86_400, 3_600)
    assert schema["properties"]["endpoints"]["items"]["enum"] == [e.name for e in ENDPOINTS]
    fixed = schema["properties"]["fixed"]["properties"]
    assert fixed["window"]["enum"] == ["1h", "6h", "12h", "24h", "7d", "30d", "90d"]  # any endpoint's window
    created = operation["responses"]["201"]["content"]["application/json"]["schema"]
    assert created["required"] == ["token", "expires_at", "origins", "endpoints", "fixed"]
    for status in ("400", "401", "403", "413", "414", "415", "429", "500", "503"):
        assert status in operation["responses"], status
    scheme = doc["components"]["securitySchemes"]["browserToken"]
    assert scheme["scheme"] == "bearer" and scheme["bearerFormat"] == "JWT"
