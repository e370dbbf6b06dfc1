"""The cache/ gate against the real Redis, and its in-process twin, with one contract."""

from __future__ import annotations

import time
import uuid

import pytest
import redis

from cache import GateSettings, LocalGate, RedisGate, redis_client

pytestmark = pytest.mark.redis


@pytest.fixture(params=["redis", "local"])
def make_gate(request, redis_url, redis_prefix):
    clients = []

    def make(**settings):
        gate_settings = GateSettings(prefix=f"{redis_prefix}{uuid.uuid4().hex[:6]}:", **settings)
        if request.param == "local":
            return LocalGate(gate_settings)
        client = redis_client(redis_url)
        clients.append(client)
        return RedisGate(client, gate_settings)

    yield make
    for client in clients:
        for key in client.scan_iter(f"{redis_prefix}*"):
            client.delete(key)
        client.close()


def test_exact_limit_and_remaining(make_gate):
    gate = make_gate()
    admissions = [gate.admit("sub:1", 5, None) for _ in range(7)]
    assert [a.allowed for a in admissions] == [True] * 5 + [False] * 2
    assert [a.remaining for a in admissions[:5]] == [4, 3, 2, 1, 0]
    assert all(a.blocked_by == "rate" for a in admissions[5:])
    assert all(1 <= a.retry_after <= 60 for a in admissions)


def test_subjects_have_separate_windows(make_gate):
    gate = make_gate()
    for _ in range(3):
        gate.admit("sub:a", 3, None)
    assert not gate.admit("sub:a", 3, None).allowed
    assert gate.admit("sub:b", 3, None).allowed


def test_moving_window_and_retry_after_is_honest(make_gate):
    gate = make_gate(window_seconds=2)
    assert gate.admit("sub:m", 2, None).allowed
    time.sleep(1.0)
    assert gate.admit("sub:m", 2, None).allowed
    denied = gate.admit("sub:m", 2, None)
    assert not denied.allowed and denied.retry_after == 1  # the first request leaves the window in ~1 s
    time.sleep(denied.retry_after)
    assert gate.admit("sub:m", 2, None).allowed, "Retry-After must not be earlier than the next accepted request"
    # A moving window, not a fixed one: the second request still counts until it is 2 s old.
    assert not gate.admit("sub:m", 2, None).allowed


def test_denied_requests_do_not_consume_the_window(make_gate):
    gate = make_gate(window_seconds=1)
    gate.admit("sub:d", 1, None)
    for _ in range(5):
        assert not gate.admit("sub:d", 1, None).allowed
    time.sleep(1.05)
    assert gate.admit("sub:d", 1, None).allowed


def test_cached_body_comes_with_the_admission(make_gate):
    gate = make_gate()
    assert gate.admit("sub:c", 10, "k").cached is None
    gate.put("k", b"body bytes", 60)
    assert gate.admit("sub:c", 10, "k").cached == b"body bytes"
    assert gate.get("k") == b"body bytes"
    assert gate.get("other") is None


def test_cache_entries_expire(make_gate):
    gate = make_gate()
    gate.put("short", b"x", 1)
    time.sleep(1.1)
    assert gate.get("short") is None


def test_denied_admission_carries_no_body(make_gate):
    gate = make_gate()
    gate.put("k", b"body", 60)
    gate.admit("sub:x", 1, "k")
    assert gate.admit("sub:x", 1, "k").cached is None


def test_auth_failures_block_the_address_even_for_valid_keys(make_gate):
    gate = make_gate(auth_failure_limit=3)
    assert all(gate.record_auth_failure("10.0.0.9").allowed for _ in range(3))
    assert not gate.record_auth_failure("10.0.0.9").allowed
    blocked = gate.admit("sub:z", 100, None, client="10.0.0.9")
    assert not blocked.allowed and blocked.blocked_by == "auth" and blocked.retry_after >= 1
    assert gate.admit("sub:z", 100, None, client="10.0.0.10").allowed


def test_fill_lock_is_exclusive_and_owned(make_gate):
    gate = make_gate()
    token = gate.try_lock("k", 30)
    assert token and gate.try_lock("k", 30) is None
    gate.unlock("k", "not-the-token")
    assert gate.try_lock("k", 30) is None
    gate.unlock("k", token)
    assert gate.try_lock("k", 30)


def test_keys_carry_the_prefix(redis_url, redis_prefix):
    client = redis_client(redis_url)
    prefix = f"{redis_prefix}iso:"
    gate = RedisGate(client, GateSettings(prefix=prefix))
    gate.admit("sub:p", 5, None)
    gate.put("body-key", b"x", 60)
    written = [k.decode() for k in client.scan_iter(f"{prefix}*")]
    assert sorted(written) == [f"{prefix}body:body-key", f"{prefix}rate:sub:p"]
    for key in written:
        client.delete(key)
    client.close()


def test_redis_client_has_short_timeouts(redis_url):
    client = redis_client(redis_url)
    kwargs = client.connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] <= 0.5 and kwargs["socket_connect_timeout"] <= 0.5
    assert isinstance(client, redis.Redis) and client.get_retry() is None  # no retries: one timeout per call
    client.close()


def test_auth_block_retry_after_waits_for_enough_failures_to_expire(make_gate):
    """Failures at t = 0, 0.3, 0.6, 0.9, 1.2 s, a limit of 2, a 2 s window, asked at t = 1.5 s:
    the address is accepted again only when four have expired (at t = 2.9 s, i.e. in 1.4 s, so
    Retry-After 2), not when the oldest has (t = 2.0 s, which would say 1)."""
    gate = make_gate(window_seconds=2, auth_failure_limit=2)
    for _ in range(5):
        gate.record_auth_failure("10.1.1.1")
        time.sleep(0.3)
    blocked = gate.admit("sub:r", 100, None, client="10.1.1.1")
    assert not blocked.allowed and blocked.blocked_by == "auth"
    assert blocked.retry_after == 2
    time.sleep(1.0)
    assert not gate.admit("sub:r", 100, None, client="10.1.1.1").allowed  # t = 2.5 s: still blocked
    time.sleep(1.0)
    assert gate.admit("sub:r", 100, None, client="10.1.1.1").allowed  # t = 3.5 s: accepted


def test_local_gate_keeps_no_state_for_quiet_addresses():
    now = [0.0]
    gate = LocalGate(GateSettings(window_seconds=60), clock=lambda: now[0])
    for i in range(1000):
        gate.admit("sub:1", 10**6, None, client=f"10.0.{i // 256}.{i % 256}")
    assert set(gate._windows) == {"rate:sub:1"}  # no entry per address without failures
    gate.record_auth_failure("10.9.9.9")
    now[0] = 61.0
    gate.admit("sub:2", 10, None, client="10.9.9.9")
    assert "authfail:10.9.9.9" not in gate._windows and "rate:sub:1" in gate._windows
