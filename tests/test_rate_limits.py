"""Per-subscription rate limits over the real Redis: exact per tier, shared by a subscription's
keys, honest headers on every authenticated response, and throttled failed authentication."""

from __future__ import annotations

import uuid

import pytest

from service.tiers import Tier
from tests.spec_table import RATE_LIMITS
from tests.support.http import assert_problem, get, post_query

pytestmark = pytest.mark.redis


def new_key(accounts, tier: str, subscription: str | None = None) -> str:
    return accounts.create_key(Tier.parse(tier), subscription=subscription or f"rl-{uuid.uuid4().hex[:8]}")[0]


@pytest.mark.parametrize("tier", ["observer", "analyst", "professional"])
def test_exact_limit_per_tier(rclient, accounts, tier):
    key = new_key(accounts, tier)
    limit = RATE_LIMITS[tier]
    statuses = [get(rclient, "/top-keywords", key).status_code for _ in range(limit)]
    assert statuses == [200] * limit
    denied = get(rclient, "/top-keywords", key)
    body = assert_problem(denied, 429)
    assert str(limit) in body["detail"]
    assert 1 <= int(denied.headers["retry-after"]) <= 60


def test_keys_of_one_subscription_share_its_limit(rclient, accounts):
    name = f"shared-{uuid.uuid4().hex[:8]}"
    first, second = new_key(accounts, "observer", name), new_key(accounts, "observer", name)
    for i in range(30):
        assert get(rclient, "/top-keywords", first if i % 2 else second).status_code == 200
    assert get(rclient, "/top-keywords", first).status_code == 429
    assert get(rclient, "/top-keywords", second).status_code == 429
    assert get(rclient, "/top-keywords", new_key(accounts, "observer")).status_code == 200


def _assert_rate_headers(result, limit: int, remaining: int, policy: str) -> None:
    headers = result.headers
    assert headers["x-ratelimit-limit"] == str(limit)
    assert headers["x-ratelimit-remaining"] == str(remaining)
    reset = int(headers["x-ratelimit-reset"])
    assert 0 <= reset <= 60
    assert headers["ratelimit-policy"] == f'"{policy}";q={limit};w=60'
    assert headers["ratelimit"] == f'"{policy}";r={remaining};t={reset}'


def test_headers_on_200_304_400_and_429(rclient, accounts):
    key = new_key(accounts, "observer")
    ok = get(rclient, "/top-keywords", key)
    _assert_rate_headers(ok, 30, 29, "observer")
    not_modified = get(rclient, "/top-keywords", key, headers={"If-None-Match": ok.headers["etag"]})
    assert not_modified.status_code == 304
    _assert_rate_headers(not_modified, 30, 28, "observer")
    bad = get(rclient, "/top-keywords", key, {"limit": "0"})
    assert_problem(bad, 400, "limit")
    _assert_rate_headers(bad, 30, 27, "observer")
    for _ in range(27):
        get(rclient, "/top-keywords", key)
    limited = get(rclient, "/top-keywords", key)
    assert_problem(limited, 429)
    _assert_rate_headers(limited, 30, 0, "observer")
    assert int(limited.headers["retry-after"]) >= 1


def test_rate_limit_comes_before_validation(rclient, accounts):
    key = new_key(accounts, "analyst")
    for _ in range(120):
        post_query(rclient, key, {"window": "24h"})
    assert_problem(post_query(rclient, key, {"window": "bogus"}), 429)


def test_unauthenticated_responses_carry_no_rate_headers(rclient):
    result = get(rclient, "/top-keywords", None)
    assert_problem(result, 401)
    assert "x-ratelimit-limit" not in result.headers


def test_failed_authentication_is_throttled_per_address(rclient, accounts):
    from service.accounts.keys import generate_key

    key = new_key(accounts, "professional")
    statuses = [get(rclient, "/top-keywords", generate_key()).status_code for _ in range(21)]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429
    blocked = get(rclient, "/top-keywords", key)
    assert_problem(blocked, 429)
    assert "failed authentications" in blocked.json["detail"]
    assert int(blocked.headers["retry-after"]) >= 1
