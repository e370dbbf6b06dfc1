"""The cache/ gate against the real Redis, and its in-process twin, with one contract."""

from __future__ import annotations

import os
import time
import uuid

import pytest
import redis

import cache
from cache import GateSettings, LocalGate, RedisGate
from cache.local_gate import _SWEEP_EVERY

pytestmark = pytest.mark.redis


@pytest.fixture(params=["redis", "local"])
def make_gate(request, redis_url, redis_prefix):
    clients = []

    def make(**settings):
        gate_settings = GateSettings(prefix=f"{redis_prefix}{uuid.uuid4().hex[:6]}:", **settings)
        if request.param == "local":
            return LocalGate(gate_settings)
        gate = RedisGate(lambda: cache.redis_connection(redis_url), gate_settings)
        clients.append(gate)
        return gate

    yield make
    for gate in clients:
        gate.close()
    client = redis.Redis.from_url(redis_url)
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


def test_auth_failures_block_the_address_for_wrong_keys_only(make_gate):
    """Past the limit the address's wrong keys are refused (429, not counted); a valid key from the
    same address is admitted as usual: one address is often many clients."""
    gate = make_gate(auth_failure_limit=3)
    assert all(gate.record_auth_failure("10.0.0.9").allowed for _ in range(3))
    blocked = gate.record_auth_failure("10.0.0.9")
    assert not blocked.allowed and blocked.blocked_by == "auth" and blocked.retry_after >= 1
    valid = gate.admit("sub:z", 100, None)
    assert valid.allowed and valid.blocked_by == "" and valid.remaining == 99
    assert gate.peek("sub:z", 100).blocked_by == ""


def test_fill_lock_is_exclusive_and_owned(make_gate):
    gate = make_gate()
    token = gate.try_lock("k", 30)
    assert token and gate.try_lock("k", 30) is None
    gate.unlock("k", "not-the-token")
    assert gate.try_lock("k", 30) is None
    gate.unlock("k", token)
    assert gate.try_lock("k", 30)


def test_keys_carry_the_prefix(redis_url, redis_prefix):
    client = redis.Redis.from_url(redis_url)
    prefix = f"{redis_prefix}iso:"
    gate = RedisGate(cache.redis_connection(redis_url), GateSettings(prefix=prefix))
    gate.admit("sub:p", 5, None)
    gate.put("body-key", b"x", 60)
    written = [k.decode() for k in client.scan_iter(f"{prefix}*")]
    assert sorted(written) == [f"{prefix}body:body-key", f"{prefix}rate:sub:p"]
    for key in written:
        client.delete(key)
    client.close()
    gate.close()


def test_without_a_url_the_gate_is_in_process_and_says_so():
    gate = cache.connect(None)
    assert isinstance(gate, LocalGate)
    assert gate.status() == {"backend": "in-process", "ok": True, "shared": False}


def test_redis_connection_has_short_timeouts(redis_url):
    connection = cache.redis_connection(redis_url)
    assert connection.timeout_seconds <= 0.5
    connection.close()


def test_redis_connection_takes_database_and_password_from_the_url():
    connection = cache.redis_connection("redis://:s3cret@example.invalid:6390/4")
    assert (connection.host, connection.port, connection.db) == ("example.invalid", 6390, 4)
    assert "s3cret" not in repr(connection)
    unix = cache.redis_connection("unix:///run/redis.sock?db=2")
    assert (unix.path, unix.db) == ("/run/redis.sock", 2)


@pytest.fixture
def redis_gate(redis_url, redis_prefix):
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:6]}:"
    gate = RedisGate(lambda: cache.redis_connection(redis_url), GateSettings(prefix=prefix))
    admin = redis.Redis.from_url(redis_url)
    yield gate, admin
    gate.close()
    for key in admin.scan_iter(f"{prefix}*"):
        admin.delete(key)
    admin.close()


def test_scripts_are_loaded_again_after_a_flush(redis_gate):
    gate, admin = redis_gate
    assert gate.admit("sub:s", 5, None).remaining == 4
    admin.script_flush()  # as after a Redis restart
    assert gate.admit("sub:s", 5, None).remaining == 3
    admin.script_flush()
    assert gate.record_auth_failure("10.2.2.2").allowed
    assert admin.script_exists(cache.redis_gate._FAIL.sha) == [True]


def test_a_connection_closed_by_the_server_is_replaced_without_an_error(redis_gate):
    gate, admin = redis_gate
    assert gate.admit("sub:k", 5, None).allowed
    own_id = gate._command("CLIENT", "ID")  # only this gate's connection: the Redis may be shared
    assert admin.client_kill_filter(_id=own_id) == 1
    admission = gate.admit("sub:k", 5, None)  # no exception: the command never ran, it is sent again
    assert admission.allowed and admission.remaining == 3


class LosesOneAnswer:
    """A connection whose command runs on the real Redis but whose answer is then lost, once,
    when armed (as when a proxy or the network drops the connection after Redis answered)."""

    def __init__(self, url: str) -> None:
        self.wire = cache.redis_connection(url)
        self.armed = False

    def call(self, *args):
        answer = self.wire.call(*args)
        if self.armed:
            self.armed = False
            raise redis.ConnectionError("connection lost before the answer arrived")
        return answer

    def close(self) -> None:
        self.wire.close()


@pytest.fixture
def lossy_gate(redis_url, redis_prefix):
    connection = LosesOneAnswer(redis_url)
    gate = RedisGate(lambda: connection, GateSettings(prefix=f"{redis_prefix}lossy-{uuid.uuid4().hex[:6]}:"))
    yield gate, connection
    gate.close()


def test_a_request_counted_before_its_answer_was_lost_is_not_refused(lossy_gate):
    gate, connection = lossy_gate
    assert [gate.admit("sub:l", 3, None).remaining for _ in range(2)] == [2, 1]
    connection.armed = True  # the third request is counted, then its answer lost: sent again
    third = gate.admit("sub:l", 3, None)
    assert third.allowed and third.remaining == 0
    fourth = gate.admit("sub:l", 3, None)
    assert not fourth.allowed and fourth.blocked_by == "rate"  # counted once, not twice


def test_a_fill_lock_taken_before_its_answer_was_lost_is_ours(lossy_gate):
    gate, connection = lossy_gate
    gate.admit("sub:m", 3, None)  # a proven connection: only those are sent again
    connection.armed = True
    token = gate.try_lock("entry", 30)
    assert token is not None  # the lost first send took it, for us
    assert gate.try_lock("entry", 30) is None  # and it is held
    gate.unlock("entry", token)
    assert gate.try_lock("entry", 30) is not None


def test_a_forked_child_opens_its_own_connection(redis_gate):
    gate, admin = redis_gate
    gate.admit("sub:f", 10, None)
    pid = os.fork()
    if pid == 0:  # the child: a working gate of its own, and the parent's socket untouched
        code = 0 if gate.admit("sub:f", 10, None).remaining == 8 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gate.admit("sub:f", 10, None).remaining == 7  # the parent's connection still in step


def test_a_gate_given_one_connection_does_not_share_it_with_a_forked_child(redis_url, redis_prefix):
    wire = cache.redis_connection(redis_url)
    gate = RedisGate(wire, GateSettings(prefix=f"{redis_prefix}fork-{uuid.uuid4().hex[:6]}:"))
    gate.admit("sub:w", 10, None)
    parent_id = gate._command("CLIENT", "ID")
    pid = os.fork()
    if pid == 0:  # the child: the same Wire object, but a connection of its own
        fresh = not wire.connected and gate._command("CLIENT", "ID") != parent_id
        os._exit(0 if fresh and gate.admit("sub:w", 10, None).remaining == 8 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gate._command("CLIENT", "ID") == parent_id  # the parent's connection, still in step
    assert gate.admit("sub:w", 10, None).remaining == 7
    gate.close()


def test_a_block_ends_when_the_failures_that_caused_it_age_out(make_gate):
    """Failures at t = 0 and 0.3 s, a limit of 2, a 2 s window: blocked from then on.
    Attempts while blocked (wrong keys at 0.6, 0.9 and 1.2 s) are refused without being counted,
    so the block ends when the oldest failure leaves, at t = 2.0 s."""
    gate = make_gate(window_seconds=2, auth_failure_limit=2)
    assert gate.record_auth_failure("10.1.1.1").allowed
    time.sleep(0.3)
    assert gate.record_auth_failure("10.1.1.1").allowed  # the second failure: still a 401
    refused = []
    for _ in range(3):
        time.sleep(0.3)
        refused.append(gate.record_auth_failure("10.1.1.1"))
    assert not any(r.allowed for r in refused) and all(r.blocked_by == "auth" for r in refused)
    assert refused[-1].retry_after == 1  # t = 1.2 s: the failure of t = 0 leaves at t = 2.0
    time.sleep(0.9)
    assert gate.record_auth_failure("10.1.1.1").allowed  # t = 2.1 s: a 401 again, counted


def test_peek_counts_nothing(make_gate):
    gate = make_gate()
    fresh = gate.peek("sub:peek", 3)
    assert fresh.allowed and fresh.remaining == 3 and fresh.reset_seconds == 0 and fresh.blocked_by == ""
    assert gate.admit("sub:peek", 3, None).remaining == 2
    assert gate.peek("sub:peek", 3).remaining == 2
    assert gate.admit("sub:peek", 3, None).remaining == 1  # the peeks counted nothing
    assert gate.admit("sub:peek", 3, None).remaining == 0
    full = gate.peek("sub:peek", 3)
    assert not full.allowed and full.blocked_by == "rate" and full.remaining == 0
    assert 59 <= full.retry_after <= 60 and 59 <= full.reset_seconds <= 60


def test_local_gate_forgets_addresses_whose_failures_aged_out():
    now = [0.0]
    gate = LocalGate(GateSettings(window_seconds=60), clock=lambda: now[0])
    for i in range(1000):
        gate.record_auth_failure(f"10.0.{i // 256}.{i % 256}")
    gate.admit("sub:1", 10, None)
    assert len(gate._windows) == 1001
    now[0] = 61.0
    for _ in range(_SWEEP_EVERY - 1000):  # the sweep comes with the next failures
        gate.record_auth_failure("10.9.9.9")
    assert set(gate._windows) == {"authfail:10.9.9.9"}


def test_bodies_come_from_redis_once_per_process(redis_gate, redis_url):
    gate, admin = redis_gate
    other = RedisGate(lambda: cache.redis_connection(redis_url), gate._settings)
    other.put("shared", b"the body", 60)
    assert gate.admit("sub:b", 10, "shared").cached == b"the body"  # fetched from Redis
    admin.delete(f"{gate._prefix}body:shared")
    assert gate.admit("sub:b", 10, "shared").cached == b"the body"  # not asked again
    third = RedisGate(lambda: cache.redis_connection(redis_url), gate._settings)
    assert third.admit("sub:c", 10, "shared").cached is None          # the shared copy is gone
    for g in (other, third):
        g.close()


def test_bodies_kept_in_process_expire_with_the_redis_entry(redis_gate, redis_url):
    gate, _ = redis_gate
    writer = RedisGate(lambda: cache.redis_connection(redis_url), gate._settings)
    writer.put("brief", b"x", 1)
    assert gate.admit("sub:e", 10, "brief").cached == b"x"
    time.sleep(1.1)
    assert gate.admit("sub:e", 10, "brief").cached is None
    assert writer.get("brief") is None
    writer.close()


def test_bodies_kept_in_process_are_bounded_least_recently_used_first():
    now = [0.0]
    overhead = cache.ProcessBodies.OVERHEAD
    kept = cache.ProcessBodies(budget=5 * (20 + overhead), clock=lambda: now[0])
    for i in range(5):
        kept.put(f"k{i}", bytes(20), 60)
    assert kept.get("k0") is not None  # used: k1 is now the least recently used
    for i in range(5, 8):
        kept.put(f"k{i}", bytes(20), 60)
    assert [kept.get(f"k{i}") is not None for i in range(8)] == [True, False, False, False, True, True, True, True]
    assert kept.size == 5 * (20 + overhead) and len(kept) == 5
    kept.put("big", bytes(kept.budget // 4 + 1), 60)  # over a quarter of the budget: not kept
    assert kept.get("big") is None
    kept.put("long", bytes(20), 120)  # evicts the least recently used (k0: the reads above went 0, 4..7)
    assert kept.get("k0") is None and len(kept) == 5
    now[0] = 61.0
    assert kept.get("k7") is None and kept.get("long") is not None  # their times: up, and not yet
    assert len(kept) == 1 and kept.size == 20 + overhead  # the expired entries' bytes given back


def test_many_small_bodies_are_bounded_too():
    kept = cache.ProcessBodies(budget=64 * 1024)
    for i in range(10_000):
        kept.put(f"key-{i}", b"{}", 60)
    assert kept.size <= 64 * 1024 and len(kept) == 64 * 1024 // (2 + cache.ProcessBodies.OVERHEAD)


def test_a_resilient_gate_serves_what_the_worker_holds_while_redis_is_down(redis_url, redis_prefix):
    """The Redis gate and its fallback share one ProcessBodies: a body fetched from Redis, or
    stored during the outage, is served by the fallback; the limits are the fallback's own."""
    from tests.support.redis_server import free_port

    prefix = f"{redis_prefix}{uuid.uuid4().hex[:6]}:"
    writer = RedisGate(lambda: cache.redis_connection(redis_url), GateSettings(prefix=prefix))
    writer.put("held", b"fetched while up", 60)
    gate = cache.connect(redis_url, prefix)
    try:
        assert gate.admit("sub:r", 10, "held").cached == b"fetched while up"
        gate._primary._factory = lambda: cache.redis_connection(f"redis://127.0.0.1:{free_port()}/0")
        gate._primary.close()  # from now on Redis does not answer
        down = gate.admit("sub:r", 10, "held")
        assert gate.degraded and down.cached == b"fetched while up" and down.remaining == 9
        gate.put("during", b"computed while down", 60)
        assert gate.admit("sub:r", 10, "during").cached == b"computed while down"
        assert gate.get("during") == b"computed while down" and gate.get("never") is None
    finally:
        gate.close()
        writer.close()
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
        client.close()
