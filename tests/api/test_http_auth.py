"""Authentication (401) and tiers (403) across every endpoint."""

from __future__ import annotations

import datetime as dt

import pytest

from service.accounts import AuthFailure, Principal
from service.accounts.keys import generate_key
from service.api.tiers import Tier
from tests.support.http import assert_problem, get, post_query
from tests.support.secret import TEST_SECRET
from tests.support.spec_table import BASE, GET_ENDPOINTS, MIN_TIER, REQUIRED

ALL_PATHS = [*GET_ENDPOINTS, "/query"]


def call(client, path, headers):
    if path == "/query":
        return client.simulate_post(BASE + path, body=b'{"window":"24h"}',
                                    headers={"Content-Type": "application/json", **headers})
    return client.simulate_get(BASE + path, params=REQUIRED.get(path), headers=headers)


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("header", [
    None, "", "Bearer", "Bearer ", "Bearer not-a-key", "Basic dXNlcjpwYXNz", "sig_live_abc",
])
def test_missing_or_malformed_key_is_401_with_a_challenge(client, path, header):
    headers = {} if header is None else {"Authorization": header}
    result = call(client, path, headers)
    assert_problem(result, 401)
    assert result.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("path", ALL_PATHS)
def test_unknown_well_formed_key_is_401(client, path):
    result = call(client, path, {"Authorization": f"Bearer {generate_key()}"})
    body = assert_problem(result, 401)
    assert 'error="invalid_token"' in result.headers["www-authenticate"]
    assert "not valid" in body["detail"]


def _app_client(fixture_data_dir, fixture_store, accounts, clock, **settings):
    import falcon.testing

    from service.app import create_app
    from service.settings import Settings

    return falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET, **settings), clock=clock,
                                                store=fixture_store, accounts=accounts))


def test_revoked_key_is_401(fixture_data_dir, fixture_store, accounts):
    from service.clock import FixedClock
    from tests.support.fixture_data import FIXTURE_NOW

    client = _app_client(fixture_data_dir, fixture_store, accounts, FixedClock(FIXTURE_NOW), auth_cache_seconds=0)
    revoked, _ = accounts.create_key(Tier.PROFESSIONAL, subscription="revoked-sub")
    assert get(client, "/top-keywords", revoked).status_code == 200
    accounts.revoke(revoked)
    assert "revoked" in assert_problem(get(client, "/top-keywords", revoked), 401)["detail"]


def test_accepted_keys_are_remembered_for_the_cache_ttl_only(accounts):
    from service.accounts.cached import CachedAuthenticator

    now = [0.0]
    cached = CachedAuthenticator(accounts, ttl_seconds=10, timer=lambda: now[0])
    key, _ = accounts.create_key(Tier.ANALYST, subscription="cached-sub")
    assert cached.authenticate(key).tier is Tier.ANALYST
    accounts.revoke(key)
    now[0] = 9.9
    assert cached.authenticate(key).tier is Tier.ANALYST  # within the TTL: remembered
    now[0] = 10.1
    assert cached.authenticate(key) is AuthFailure.REVOKED  # past it: the database decides


def test_failures_are_never_remembered(accounts):
    from service.accounts.cached import CachedAuthenticator

    cached = CachedAuthenticator(accounts, ttl_seconds=60)
    assert cached.authenticate(generate_key()) is AuthFailure.UNKNOWN
    assert cached.authenticate(None) is AuthFailure.MISSING
    assert cached.authenticate("Bearer nonsense") is AuthFailure.MALFORMED


def test_expired_key_is_401(tmp_path, fixture_data_dir, fixture_store):
    import falcon.testing

    from service.accounts import AccountStore
    from service.app import create_app
    from service.clock import FixedClock
    from service.settings import Settings
    from tests.support.fixture_data import FIXTURE_NOW

    clock = FixedClock(FIXTURE_NOW)
    accounts = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}", clock=clock)
    key, _ = accounts.create_key(Tier.OBSERVER, expires_at=FIXTURE_NOW + dt.timedelta(hours=1))
    client = falcon.testing.TestClient(create_app(Settings(data_dir=fixture_data_dir, secret=TEST_SECRET), clock=clock,
                                                  store=fixture_store, accounts=accounts))
    assert get(client, "/top-keywords", key).status_code == 200
    clock.advance(dt.timedelta(hours=1))
    assert "expired" in assert_problem(get(client, "/top-keywords", key), 401)["detail"]
    accounts.close()


def test_the_key_never_appears_in_responses(client, keys):
    result = get(client, "/top-keywords", keys["observer"], {"limt": "1"})
    assert keys["observer"] not in result.text


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("tier", ["observer", "analyst", "professional"])
def test_tiers(client, keys, path, tier):
    result = call(client, path, {"Authorization": f"Bearer {keys[tier]}"})
    order = ["observer", "analyst", "professional"]
    if order.index(tier) >= order.index(MIN_TIER[path]):
        assert result.status_code == 200, result.text
    else:
        body = assert_problem(result, 403)
        assert "Analyst" in body["detail"] and "Observer" in body["detail"]


def test_auth_is_checked_before_validation(client, keys):
    """401 before 400: an anonymous caller learns nothing about parameters."""
    assert_problem(get(client, "/top-keywords", None, {"limit": "0"}), 401)
    assert_problem(post_query(client, keys["observer"], {"window": "bad"}), 403)


def test_scheme_is_case_insensitive(client, keys):
    result = client.simulate_get(BASE + "/top-keywords", headers={"Authorization": f"bearer {keys['observer']}"})
    assert result.status_code == 200


def test_the_key_cache_is_bounded_and_honours_key_expiry(tmp_path):
    from service.accounts import AccountStore
    from service.accounts.cached import CachedAuthenticator
    from service.clock import FixedClock
    from tests.support.fixture_data import FIXTURE_NOW

    clock = FixedClock(FIXTURE_NOW)
    store = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}", clock=clock)
    timer = [0.0]
    cached = CachedAuthenticator(store, ttl_seconds=60, maxsize=3, timer=lambda: timer[0])
    many = [store.create_key(Tier.OBSERVER)[0] for _ in range(7)]
    for key in many * 2:
        assert cached.authenticate(key).tier is Tier.OBSERVER
        assert len(cached._accepted) <= 3
    brief, _ = store.create_key(Tier.ANALYST, expires_at=FIXTURE_NOW + dt.timedelta(seconds=5))
    assert cached.authenticate(brief).tier is Tier.ANALYST
    clock.advance(dt.timedelta(seconds=6))
    assert cached.authenticate(brief) is AuthFailure.EXPIRED  # remembered, but never past its expiry
    store.close()


class _CountingStore:
    """An AccountStore whose batch lookups are recorded (the digests and key ids each query asked for)."""

    def __init__(self, store) -> None:
        self._store = store
        self.clock = store.clock
        self.queries: list[list[str]] = []

    def authenticate(self, presented):
        return self._store.authenticate(presented)

    def authenticate_refs(self, refs):
        self.queries.append(list(refs))
        return self._store.authenticate_refs(refs)


def test_keys_due_for_a_check_go_in_one_query_with_the_key_looked_up(accounts):
    from service.accounts import hash_key
    from service.accounts.cached import CachedAuthenticator

    store = _CountingStore(accounts)
    timer = [0.0]
    cached = CachedAuthenticator(store, ttl_seconds=10, timer=lambda: timer[0])
    first, second, third, fourth = (accounts.create_key(Tier.ANALYST)[0] for _ in range(4))
    assert cached.authenticate(first).tier is Tier.ANALYST       # t=0: first checked
    timer[0] = 3.0
    assert cached.authenticate(second).tier is Tier.ANALYST      # t=3: first is not due yet (< ttl/2)
    assert store.queries == [[hash_key(first)], [hash_key(second)]]
    timer[0] = 4.0
    for key in (first, second):                                 # both in use
        cached.authenticate(key)
    timer[0] = 6.0
    assert cached.authenticate(third).tier is Tier.ANALYST       # t=6: first (checked at 0) is due
    assert store.queries[-1] == [hash_key(third), hash_key(first)]
    timer[0] = 9.0
    assert cached.authenticate(fourth).tier is Tier.ANALYST      # t=9: second (3) is due; first was checked at 6
    assert store.queries[-1] == [hash_key(fourth), hash_key(second)]
    timer[0] = 12.9
    for key in (first, second, third, fourth):                  # every key was checked within 10 s
        assert cached.authenticate(key).tier is Tier.ANALYST
    assert len(store.queries) == 4


def test_a_key_not_used_since_its_check_is_not_checked_again_and_is_forgotten(accounts):
    from service.accounts import hash_key
    from service.accounts.cached import CachedAuthenticator

    store = _CountingStore(accounts)
    timer = [0.0]
    cached = CachedAuthenticator(store, ttl_seconds=10, timer=lambda: timer[0])
    once, busy, newcomer, late = (accounts.create_key(Tier.OBSERVER)[0] for _ in range(4))
    cached.authenticate(once)
    cached.authenticate(busy)
    timer[0] = 2.0
    cached.authenticate(busy)
    timer[0] = 6.0
    cached.authenticate(newcomer)                                # busy goes along; once does not
    assert store.queries[-1] == [hash_key(newcomer), hash_key(busy)]
    timer[0] = 11.0
    cached.authenticate(late)                                    # once's time is up: dropped, not checked
    assert store.queries[-1] == [hash_key(late)]
    assert hash_key(once) not in cached._accepted
    queries = len(store.queries)
    cached.authenticate(once)                                    # used again: looked up afresh
    assert store.queries[queries:] == [[hash_key(once)]]


def test_a_batch_check_forgets_a_revoked_key_and_its_next_request_is_refused(accounts):
    from service.accounts.cached import CachedAuthenticator

    store = _CountingStore(accounts)
    timer = [0.0]
    cached = CachedAuthenticator(store, ttl_seconds=10, timer=lambda: timer[0])
    revoked, newcomer = (accounts.create_key(Tier.OBSERVER)[0] for _ in range(2))
    assert cached.authenticate(revoked).tier is Tier.OBSERVER
    accounts.revoke(revoked)
    timer[0] = 6.0
    assert cached.authenticate(revoked).tier is Tier.OBSERVER   # remembered: not checked again yet
    assert cached.authenticate(newcomer).tier is Tier.OBSERVER  # its lookup takes the revoked key along
    assert cached.authenticate(revoked) is AuthFailure.REVOKED  # forgotten, so the database says why
    assert len(store.queries) == 3


def test_a_batch_answer_older_than_another_check_is_not_applied(accounts):
    """Thread A's batch reads key K as valid; meanwhile K is revoked and thread B finds it so.
    A's older answer must not bring K back. (The interleaving is made by the store stub: the
    cache holds no lock while the database is asked.)"""
    from service.accounts.cached import CachedAuthenticator

    timer = [0.0]
    revoked, newcomer = (accounts.create_key(Tier.OBSERVER)[0] for _ in range(2))

    class Interleaving(_CountingStore):
        def authenticate_refs(self, refs):
            outcomes = super().authenticate_refs(refs)
            if len(refs) > 1:                      # A's batch has read K as valid: now B
                accounts.revoke(revoked)
                timer[0] = 10.5                       # K's entry has run out
                assert cached.authenticate(revoked) is AuthFailure.REVOKED
            return outcomes

    store = Interleaving(accounts)
    cached = CachedAuthenticator(store, ttl_seconds=10, timer=lambda: timer[0])
    cached.authenticate(revoked)
    timer[0] = 6.0
    cached.authenticate(revoked)                      # in use: due at the next batch
    assert cached.authenticate(newcomer).tier is Tier.OBSERVER
    assert cached.authenticate(revoked) is AuthFailure.REVOKED
    assert len(store.queries) == 4                     # K was asked for again, not served from A's answer


def test_a_batch_takes_the_oldest_checks_first_and_no_more_than_its_size(accounts):
    from service.accounts import hash_key
    from service.accounts.cached import CachedAuthenticator

    store = _CountingStore(accounts)
    timer = [0.0]
    cached = CachedAuthenticator(store, ttl_seconds=10, batch=3, timer=lambda: timer[0])
    remembered = [accounts.create_key(Tier.OBSERVER)[0] for _ in range(5)]
    for n, key in enumerate(remembered):
        timer[0] = float(n)
        cached.authenticate(key)
    timer[0] = 9.0
    for key in remembered:                                       # all in use
        cached.authenticate(key)
    timer[0] = 9.5  # the keys checked at 0..4 are all due
    newcomer, _ = accounts.create_key(Tier.OBSERVER)
    cached.authenticate(newcomer)
    assert store.queries[-1] == [hash_key(newcomer), hash_key(remembered[0]), hash_key(remembered[1])]
    timer[0] = 9.9  # those two were just checked: they stay remembered past their first ten seconds
    newcomer2, _ = accounts.create_key(Tier.OBSERVER)
    cached.authenticate(newcomer2)
    assert store.queries[-1] == [hash_key(newcomer2), hash_key(remembered[2]), hash_key(remembered[3])]
    timer[0] = 15.0
    queries = len(store.queries)
    for key in remembered[:4]:
        cached.authenticate(key)
    assert len(store.queries) == queries


def test_a_full_cache_never_evicts_the_key_just_looked_up(accounts):
    from service.accounts import hash_key
    from service.accounts.cached import CachedAuthenticator

    store = _CountingStore(accounts)
    timer = [0.0]
    cached = CachedAuthenticator(store, ttl_seconds=10, maxsize=3, timer=lambda: timer[0])
    remembered = [accounts.create_key(Tier.OBSERVER)[0] for _ in range(3)]
    for key in remembered:
        cached.authenticate(key)
    timer[0] = 6.0
    for key in remembered:
        cached.authenticate(key)
    newcomer, _ = accounts.create_key(Tier.OBSERVER)
    cached.authenticate(newcomer)                                # a batch of 4 into room for 3
    assert len(cached._accepted) <= 3
    assert hash_key(newcomer) in cached._accepted
    queries = len(store.queries)
    cached.authenticate(newcomer)
    assert len(store.queries) == queries


def test_a_thousand_busy_keys_cost_a_few_queries_per_ttl_not_one_per_key(accounts):
    """The case the batches are for: every key in use all the time (as in bench/bench_cached.py,
    1,000 keys taking turns). After the first sight of each key, the worker asks the database a
    handful of times per TTL instead of once per key."""
    from service.accounts.cached import CachedAuthenticator

    store = _CountingStore(accounts)
    timer = [0.0]
    cached = CachedAuthenticator(store, ttl_seconds=10, timer=lambda: timer[0])
    busy = [accounts.create_key(Tier.PROFESSIONAL)[0] for _ in range(1000)]
    for n in range(40_000):                       # 40 s at 1,000 requests a second, keys in turn
        timer[0] = n / 1000
        assert isinstance(cached.authenticate(busy[n % len(busy)]), Principal)
    first_sight = 1000
    later = store.queries[first_sight:]
    assert 0 < len(later) <= 15                   # 30 s after the first 10: 4 batches per 10 s (518 before busy keys past their time were kept in batches)
    assert sum(len(query) for query in later) >= 3 * 1000  # yet every key was checked every 10 s


# -- what a refused key is told (issue 42) ------------------------------------------------------

def test_a_401_says_how_to_get_and_check_a_key(client):
    for header in ({}, {"Authorization": f"Bearer {generate_key()}"}):
        detail = assert_problem(call(client, "/top-keywords", header), 401)["detail"]
        assert "python -m service keys create" in detail and "./scripts/run.sh" in detail, detail
    unknown = assert_problem(call(client, "/top-keywords", {"Authorization": f"Bearer {generate_key()}"}), 401)
    assert "GET /api/v1/account" in unknown["detail"] and "whole key" in unknown["detail"]


def test_a_keys_prefix_sent_as_the_key_is_named_as_such(client, accounts):
    key, _ = accounts.create_key(Tier.OBSERVER, subscription="prefix-test")
    detail = assert_problem(call(client, "/top-keywords", {"Authorization": f"Bearer {key[:16]}"}), 401)["detail"]
    assert "16 characters is a key's public prefix" in detail and "Send the whole key" in detail
    assert key[:16] not in detail  # nothing of the key is echoed
    other = assert_problem(call(client, "/top-keywords", {"Authorization": "Bearer sig_live_abc"}), 401)["detail"]
    assert "prefix" not in other and "40 letters and digits" in other


def test_the_failed_authentication_429_names_its_cause_and_how_long(fixture_data_dir, fixture_store, accounts):
    from service.clock import FixedClock
    from tests.support.fixture_data import FIXTURE_NOW

    client = _app_client(fixture_data_dir, fixture_store, accounts, FixedClock(FIXTURE_NOW))
    wrong = {"Authorization": f"Bearer {generate_key()}"}
    for _ in range(20):
        assert_problem(call(client, "/top-keywords", wrong), 401)
    blocked = call(client, "/top-keywords", wrong)
    detail = assert_problem(blocked, 429)["detail"]
    seconds = int(blocked.headers["retry-after"])
    assert 1 <= seconds <= 60
    assert detail.startswith("Too many failed authentications from this address: 20 requests with a wrong or "
                             "malformed API key within 60 seconds.")
    assert f"refused for the next {seconds} s" in detail and "a valid key is served meanwhile" in detail
    assert "GET /api/v1/account" in detail
    key, _ = accounts.create_key(Tier.OBSERVER, subscription="blocked-address-valid-key")
    assert call(client, "/top-keywords", {"Authorization": f"Bearer {key}"}).status_code == 200
