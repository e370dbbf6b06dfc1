"""Per-subscription rate limits over the real Redis: exact per tier, shared by a subscription's
keys, honest headers on every authenticated response, and throttled failed authentication."""

from __future__ import annotations

import uuid

import pytest

from service.api.tiers import Tier
from tests.support.http import assert_problem, get, post_query
from tests.support.spec_table import RATE_LIMITS

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
    # The first request leaves the window 60 s after it was sent, a few seconds ago at most.
    assert 45 <= int(denied.headers["retry-after"]) <= 60
    assert denied.headers["retry-after"] == denied.headers["x-ratelimit-reset"]


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
    """Past 20 failures a minute the address's wrong keys get 429 instead of 401; a valid key from
    the same address is served as usual (one address is often many clients: a NAT, a proxy, the
    dashboard, the MCP server), with its own rate-limit headers."""
    from service.accounts.keys import generate_key

    key = new_key(accounts, "professional")
    statuses = [get(rclient, "/top-keywords", generate_key()).status_code for _ in range(21)]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429
    wrong = get(rclient, "/top-keywords", generate_key())
    assert_problem(wrong, 429)
    assert "failed authentications" in wrong.json["detail"]
    assert int(wrong.headers["retry-after"]) >= 1
    assert not any(name.startswith(("ratelimit", "x-ratelimit")) for name in wrong.headers)
    served = get(rclient, "/top-keywords", key)
    assert served.status_code == 200
    _assert_rate_headers(served, 300, 299, "professional")


def test_a_blocked_address_still_gets_403_for_a_valid_key_above_its_plan(rclient, accounts):
    from service.accounts.keys import generate_key

    key = new_key(accounts, "observer")
    for _ in range(21):
        get(rclient, "/top-keywords", generate_key())
    refused = post_query(rclient, key, {"window": "24h"})
    assert_problem(refused, 403)
    assert "x-ratelimit-limit" in refused.headers


def test_403_carries_the_rate_headers_and_counts_nothing(rclient, accounts):
    key = new_key(accounts, "observer")
    forbidden = post_query(rclient, key, {"window": "24h"})
    assert_problem(forbidden, 403)
    _assert_rate_headers(forbidden, 30, 30, "observer")
    _assert_rate_headers(get(rclient, "/top-keywords", key), 30, 29, "observer")


def test_tier_comes_before_the_rate_limit(rclient, accounts):
    key = new_key(accounts, "observer")
    for _ in range(30):
        get(rclient, "/top-keywords", key)
    forbidden = post_query(rclient, key, {"window": "24h"})
    assert_problem(forbidden, 403)
    _assert_rate_headers(forbidden, 30, 0, "observer")
    assert "retry-after" not in forbidden.headers  # no point retrying a 403


def test_rate_headers_belong_to_the_caller_not_to_the_cached_entry(rclient, accounts):
    professional, observer = new_key(accounts, "professional"), new_key(accounts, "observer")
    filled = get(rclient, "/top-keywords", professional, {"limit": "7"})
    assert filled.headers["x-cache"] == "miss"
    _assert_rate_headers(filled, 300, 299, "professional")
    shared = get(rclient, "/top-keywords", observer, {"limit": "7"})
    assert shared.headers["x-cache"] == "hit" and shared.content == filled.content
    _assert_rate_headers(shared, 30, 29, "observer")
