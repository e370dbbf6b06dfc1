"""GET /api/v1/account: who the key belongs to and what its plan may do."""

from __future__ import annotations

from openapi_spec_validator import validate

from service.accounts.keys import generate_key
from service.api.endpoints import ENDPOINTS
from service.api.openapi import build_openapi
from service.api.tiers import Tier
from tests.support.http import assert_problem, auth

ACCOUNT = "/api/v1/account"


def account(client, key, **kwargs):
    headers = {**auth(key), **kwargs.pop("headers", {})}
    return client.simulate_get(ACCOUNT, headers=headers, **kwargs)


def test_each_plan_sees_its_subscription_limit_and_endpoints(client, keys, accounts):
    for tier in Tier:
        result = account(client, keys[tier.slug])
        assert result.status_code == 200, result.text
        body = result.json
        assert body["plan"] == tier.slug and body["plan_label"] == tier.label
        assert body["requests_per_minute"] == tier.requests_per_minute
        assert body["subscription"].startswith(f"test-{tier.slug}-")
        allowed = [e for e in ENDPOINTS if tier.allows(e.min_tier)]
        assert body["endpoints"] == [{"operation": e.name, "method": e.method, "path": e.full_path} for e in allowed]
        assert body["key_prefix"] and keys[tier.slug].startswith(body["key_prefix"])
        assert body["key_expires_at"] is None
        assert body["disclaimer"]
    observer = account(client, keys["observer"]).json
    assert "query" not in {e["operation"] for e in observer["endpoints"]}


def test_never_shows_the_key_or_its_hash(client, keys):
    from service.accounts import hash_key

    key = keys["analyst"]
    text = account(client, key).text
    assert key not in text and hash_key(key) not in text
    assert len(account(client, key).json["key_prefix"]) < len(key) // 2


def test_same_auth_rules_401(client):
    assert_problem(account(client, None), 401)
    result = account(client, generate_key())
    assert_problem(result, 401)
    assert result.headers["www-authenticate"].startswith("Bearer")


def test_parameters_are_refused_with_the_usual_400(client, keys):
    result = account(client, keys["observer"], query_string="plan=x")
    body = assert_problem(result, 400, "plan")
    assert body["detail"].startswith("Parameter 'plan' unknown parameter.")


def test_counts_against_the_rate_limit_and_carries_its_headers(client, keys):
    key = keys["observer"]  # 30 a minute, and the clock stands still
    first = account(client, key)
    assert first.headers["x-ratelimit-limit"] == "30"
    assert first.headers["x-ratelimit-remaining"] == "29"
    for _ in range(29):
        assert account(client, key).status_code == 200
    refused = account(client, key)
    assert_problem(refused, 429)
    assert int(refused.headers["retry-after"]) >= 1


def test_etag_gives_304(client, keys):
    first = account(client, keys["professional"])
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "private, no-cache"
    again = account(client, keys["professional"], headers={"If-None-Match": etag})
    assert again.status_code == 304 and not again.content


def test_documented_in_openapi(client):
    document = client.simulate_get("/api/v1/openapi").json
    validate(document)
    operation = document["paths"][ACCOUNT]["get"]
    assert operation["operationId"] == "account"
    assert operation["security"] == [{"bearerAuth": []}]
    for status in ("200", "304", "400", "401", "414", "429", "500", "503"):
        assert status in operation["responses"], status
    # Every plan may ask who it is: the only 403 is a credential's (a browser token, a key from a web page).
    assert "credential-not-allowed" in operation["responses"]["403"]["description"]


def test_body_matches_its_documented_schema(client, keys):
    from jsonschema import Draft202012Validator

    schema = build_openapi()["paths"][ACCOUNT]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    for tier in Tier:
        Draft202012Validator(schema).validate(account(client, keys[tier.slug]).json)
