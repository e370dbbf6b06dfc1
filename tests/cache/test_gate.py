"""The cache/ gate against the real Redis, and its in-process twin, with one contract."""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid

import pytest
import redis

import cache
from cache import GateSettings, LocalGate, RedisGate
from cache.local_gate import _SWEEP_EVERY
from cache.redis_gate import _ADMIT
from tests.support.redis_app import delete_prefix

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
    prefix = f"{redis_prefix}lossy-{uuid.uuid4().hex[:6]}:"
    gate = RedisGate(lambda: connection, GateSettings(prefix=prefix))
    yield gate, connection
    gate.close()
    delete_prefix(redis_url, prefix)  # the requests asked recently (a sorted set without expiry)


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


# -- the requests asked most (what precompute computes first, and the shared privacy ledger pays for):
# by how many subscriptions asked each, once per subscription and UTC day, not by how often


def test_a_request_counts_the_subscriptions_that_asked_it_not_how_often(make_gate):
    gate = make_gate()
    for _ in range(50):  # one subscription repeating a request (repeats are free for it)
        assert gate.admit("sub:repeats", 100, None, "repeated").allowed
    for subscription in ("sub:a", "sub:b", "sub:c"):
        assert gate.admit(subscription, 100, None, "widely").allowed
    assert gate.most_asked(10) == [("widely", 3.0), ("repeated", 1.0)]
    # The same with the privacy ledger read in the round trip (the signals endpoints' form).
    for _ in range(3):
        assert gate.admit("sub:a", 100, "body", "repeated", "sub:a:2026-03", "answer").allowed
    assert gate.most_asked(10) == [("widely", 3.0), ("repeated", 2.0)]
    # Faded, a count is not made up again by the same subscriptions the same day.
    gate.fade_asked(0.5, 10)
    for subscription in ("sub:a", "sub:b", "sub:c", "sub:repeats"):
        gate.admit(subscription, 100, None, "widely")
    assert gate.most_asked(10) == [("widely", 2.5), ("repeated", 1.0)]


def test_a_refused_request_counts_nothing(make_gate):
    gate = make_gate()
    assert gate.admit("sub:r", 1, None, "accepted").allowed
    refused = gate.admit("sub:r", 1, None, "refused")
    assert not refused.allowed and refused.blocked_by == "rate"
    assert gate.most_asked(10) == [("accepted", 1.0)]
    assert gate.peek("sub:r", 1).blocked_by == "rate"  # a peek counts no request either
    # Nor did it mark the request as asked by the subscription today: accepted later, it counts.
    assert gate.admit("sub:r", 10, None, "refused").allowed
    assert dict(gate.most_asked(10)) == {"accepted": 1.0, "refused": 1.0}


def test_redis_keeps_what_a_subscription_asked_in_a_set_named_by_the_utc_day(redis_gate):
    gate, admin = redis_gate
    before = admin.time()[0]
    for _ in range(3):
        gate.admit("sub:d", 100, None, "daily")
    after = admin.time()[0]
    [key] = [k.decode() for k in admin.scan_iter(f"{gate._prefix}asked-by:*")]
    days = {str(t // 86400) for t in (before, after)}  # days since 1970-01-01, UTC
    assert key.removeprefix(f"{gate._prefix}asked-by:sub:d:") in days  # the day by the Redis server's clock
    assert admin.smembers(key) == {b"daily"}
    # It lives until the day's end (UTC), when its name is never used again.
    assert 0 < admin.ttl(key) <= (after // 86400 + 1) * 86400 - before
    assert gate.most_asked(10) == [("daily", 1.0)]


def test_redis_counts_a_subscription_again_the_next_utc_day(redis_gate):
    """The next day's requests go to the next day's set: the asks so far are moved to yesterday's
    set (as if made yesterday), and the same request asked again counts again, once."""
    gate, admin = redis_gate
    for _ in range(5):
        gate.admit("sub:n", 100, None, "daily")
    [key] = [k.decode() for k in admin.scan_iter(f"{gate._prefix}asked-by:*")]
    day = int(key.rpartition(":")[2])
    yesterday = f"{key.rpartition(':')[0]}:{day - 1}"
    admin.rename(key, yesterday)
    for _ in range(5):
        gate.admit("sub:n", 100, None, "daily")
    assert gate.most_asked(10) == [("daily", 2.0)]
    assert admin.smembers(key) == admin.smembers(yesterday) == {b"daily"}


@pytest.mark.parametrize("kind", ["redis", "local"])
def test_a_subscription_counts_only_its_first_distinct_requests_of_a_day(kind, redis_gate):
    """A day's set of what one subscription asked is bounded (cache.gate.MOST_ASKED_A_DAY): past
    it, its further distinct requests count for nothing, others' still count, and Redis's set
    stays at the bound."""
    gate, admin = redis_gate if kind == "redis" else (LocalGate(), None)
    gate.most_asked_a_day = 3
    for name in ("a", "b", "c", "d", "e"):
        assert gate.admit("sub:busy", 100, None, name).allowed  # accepted all the same
    gate.admit("sub:busy", 100, None, "a")  # already counted today: nothing
    gate.admit("sub:other", 100, None, "e")
    assert dict(gate.most_asked(10)) == {"a": 1.0, "b": 1.0, "c": 1.0, "e": 1.0}
    if admin is not None:
        [key] = [k for k in admin.scan_iter(f"{gate._prefix}asked-by:sub:busy:*")]
        assert admin.scard(key) == 3


def test_local_gate_counts_a_subscription_again_the_next_utc_day():
    wall = [dt.datetime(2026, 3, 10, 23, 59, 59, tzinfo=dt.UTC).timestamp()]
    gate = LocalGate(wall_clock=lambda: wall[0])
    for _ in range(5):
        gate.admit("sub:n", 100, None, "daily")
    gate.admit("sub:o", 100, None, "other")
    assert gate.most_asked(10) == [("daily", 1.0), ("other", 1.0)]
    wall[0] += 1  # midnight, UTC
    for _ in range(5):
        gate.admit("sub:n", 100, None, "daily")
    assert gate.most_asked(10) == [("daily", 2.0), ("other", 1.0)]
    assert gate._asked_by == {"sub:n": {"daily"}}  # the day before is forgotten


def test_a_request_sent_again_after_its_answer_was_lost_is_counted_once(lossy_gate):
    gate, connection = lossy_gate
    assert gate.admit("sub:l", 10, None, "first").allowed  # a proven connection: only those are sent again
    connection.armed = True  # counted by the first send, then its answer lost: sent again, as a replay
    assert gate.admit("sub:m", 10, None, "lost").allowed
    assert dict(gate.most_asked(10)) == {"first": 1.0, "lost": 1.0}


def test_a_replay_counts_nothing(redis_gate):
    """admit.lua's replay form counts no request among the asked (it may have been counted by the
    first send), even one the subscription has not asked today."""
    gate, admin = redis_gate
    keys = [gate._key("rate", "sub:p"), "", gate._asked_key, "", gate._asked_by_key("sub:p")]
    allowed, *_ = gate._script(_ADMIT, keys, [10, 60_000_000, "member-1", "replay", "replayed", "", 100])
    assert allowed == 1
    assert gate.most_asked(10) == []
    assert list(admin.scan_iter(f"{gate._prefix}asked-by:*")) == []
