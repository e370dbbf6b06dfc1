"""cache.wire.ReplyWait: poll briefly for Redis's answer, then sleep on the socket; stop polling
while answers keep coming late. The policy is tested with a scripted socket; the wiring with the
real Redis."""

from __future__ import annotations

import socket

import pytest

from cache import ReplyWait, Wire
from service.app import create_app
from service.settings import Settings, SettingsError
from service.store.reader import EventStore
from tests.support.secret import TEST_SECRET


class ScriptedSocket:
    """Answers a non-blocking receive with EAGAIN `empty_polls` times, then with `data`; a
    blocking receive always gets `data`. Records which kind of receive each call was."""

    def __init__(self, data: bytes = b"+PONG\r\n", empty_polls: int | None = 0) -> None:
        self.data = data
        self.empty_polls = empty_polls  # None: never ready while polling
        self.calls: list[str] = []

    def ready_after(self, empty_polls: int | None) -> ScriptedSocket:
        self.empty_polls = empty_polls
        return self

    def recv_into(self, buffer: bytearray, nbytes: int = 0, flags: int = 0) -> int:
        if flags & socket.MSG_DONTWAIT:
            self.calls.append("poll")
            if self.empty_polls is None or self.empty_polls > 0:
                if self.empty_polls is not None:
                    self.empty_polls -= 1
                raise BlockingIOError
        else:
            self.calls.append("block")
        buffer[: len(self.data)] = self.data
        return len(self.data)


def receive(wait: ReplyWait, sock: ScriptedSocket) -> bytes:
    buffer = bytearray(64)
    return bytes(buffer[: wait.first_bytes(sock, buffer)])


def test_zero_never_polls():
    wait, sock = ReplyWait(0), ScriptedSocket()
    assert receive(wait, sock) == b"+PONG\r\n"
    assert sock.calls == ["block"]
    assert wait.polled == 0


def test_an_answer_that_comes_while_polling_is_taken_without_sleeping():
    wait, sock = ReplyWait(1.0), ScriptedSocket(empty_polls=3)
    assert receive(wait, sock) == b"+PONG\r\n"
    assert sock.calls == ["poll"] * 4
    assert (wait.polled, wait.caught, wait.missed) == (1, 1, 0)


def test_an_answer_later_than_the_budget_is_waited_for_by_sleeping():
    wait, sock = ReplyWait(0.000_05), ScriptedSocket(empty_polls=None)
    assert receive(wait, sock) == b"+PONG\r\n"
    assert sock.calls[-1] == "block" and set(sock.calls[:-1]) == {"poll"}
    assert (wait.polled, wait.caught, wait.missed) == (1, 0, 1)


def test_polling_pauses_after_a_run_of_late_answers_then_resumes():
    wait, sock = ReplyWait(0.000_01), ScriptedSocket(empty_polls=None)
    for _ in range(ReplyWait.MISSES_BEFORE_PAUSE):
        receive(wait, sock)
    assert wait.missed == ReplyWait.MISSES_BEFORE_PAUSE
    sock.calls.clear()
    for _ in range(ReplyWait.PAUSE_CALLS):
        receive(wait, sock)
    assert sock.calls == ["block"] * ReplyWait.PAUSE_CALLS  # no CPU spent polling meanwhile
    sock.ready_after(0).calls.clear()
    receive(wait, sock)
    assert sock.calls == ["poll"]  # polling again, and it pays: the answer was ready
    assert wait.caught == 1


def test_one_quick_answer_resets_the_run_of_late_ones():
    wait, sock = ReplyWait(0.000_01), ScriptedSocket()
    for _ in range(3):
        for _ in range(ReplyWait.MISSES_BEFORE_PAUSE - 1):
            receive(wait, sock.ready_after(None))
        receive(wait, sock.ready_after(0))
    sock.calls.clear()
    receive(wait, sock.ready_after(0))
    assert sock.calls == ["poll"]  # never paused: no run reached MISSES_BEFORE_PAUSE


def test_polling_that_pays_only_now_and_then_pauses_too():
    # Two late answers, then a quick one: never MISSES_BEFORE_PAUSE in a row, but most are late.
    wait, sock = ReplyWait(0.000_01), ScriptedSocket()
    for n in range(ReplyWait.ROUND):
        receive(wait, sock.ready_after(0 if n % 3 == 2 else None))
    assert wait.missed > ReplyWait.MOST_MISSES_PER_ROUND
    sock.calls.clear()
    receive(wait, sock.ready_after(0))
    assert sock.calls == ["block"]  # paused


def test_polling_that_mostly_pays_keeps_going():
    wait, sock = ReplyWait(0.000_01), ScriptedSocket()
    for n in range(3 * ReplyWait.ROUND):  # one late answer in four
        receive(wait, sock.ready_after(None if n % 4 == 0 else 0))
    sock.calls.clear()
    receive(wait, sock.ready_after(0))
    assert sock.calls == ["poll"]


@pytest.mark.parametrize("spin", [-1, float("inf"), float("nan")])
def test_a_budget_must_be_finite_and_not_negative(spin):
    with pytest.raises(ValueError):
        ReplyWait(spin)


def test_polling_never_outlasts_the_timeout():
    assert Wire("redis://localhost:6379/0", 0.002, 0.005).reply_wait.spin_seconds == 0.002
    with pytest.raises(ValueError):
        Wire("redis://localhost:6379/0", 0.000_000_5)  # would pack as "no timeout at all"


@pytest.mark.parametrize("value", ["-1", "10001", "soon"])
def test_the_setting_is_bounded(value):
    with pytest.raises(SettingsError, match="SIGNALS_REDIS_SPIN_MICROSECONDS"):
        Settings.from_env({"SIGNALS_REDIS_SPIN_MICROSECONDS": value})


def test_the_setting_reaches_the_connection(tmp_path):
    assert Settings.from_env({}).redis_spin_microseconds == 0  # off unless asked for
    assert Settings.from_env({"SIGNALS_REDIS_SPIN_MICROSECONDS": "0"}).redis_spin_microseconds == 0
    settings = Settings.from_env({"REDIS_URL": "redis://127.0.0.1:6379/0", "SIGNALS_REDIS_SPIN_MICROSECONDS": "123",
                                  "SIGNALS_DATA_DIR": str(tmp_path), "SIGNALS_SECRET": TEST_SECRET})
    app = create_app(settings, store=EventStore(tmp_path))  # nothing connects until a request
    resource, *_ = app._router.find("/api/v1/signals/top-keywords")
    wire = resource._gate._primary._factory()
    assert wire.reply_wait.spin_seconds == pytest.approx(0.000_123)


def test_tls_connections_never_poll():
    # An SSL socket takes no receive flags, and its data must be decrypted first.
    assert Wire("rediss://localhost:6380/0", 0.25, 0.001).reply_wait.spin_seconds == 0
    assert Wire("redis://localhost:6379/0", 0.25, 0.001).reply_wait.spin_seconds == 0.001


@pytest.mark.redis
def test_polling_for_real_answers(redis_url, redis_prefix):
    # A generous budget, so that on a busy machine too some answers come while polling.
    connection = Wire(redis_url, 0.25, 0.01)
    key = f"{redis_prefix}reply-wait"
    try:
        for n in range(1, 51):
            assert connection.call("INCR", key) == n
        big = b"x" * 200_000  # an answer longer than one receive: the rest is read by blocking
        connection.call("SET", key, big, "EX", 60)
        assert connection.call("GET", key) == big
        wait = connection.reply_wait
        assert wait.caught + wait.missed == wait.polled > 0
        assert wait.caught > 0
    finally:
        connection.call("DEL", key)
        connection.close()
