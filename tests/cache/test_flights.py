"""Each answer computed once (service/answers/flights.py), over the real Redis and the in-process gate:
requests of one process join one flight, processes share one fill lock whose holder keeps it
alive and says when it expects the answer, failures are shared, and an answer not expected
within a request's patience is refused at once while its computation goes on."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

import cache
from service.answers.cache_entry import CacheEntry
from service.answers.compute_slots import ComputeSlots
from service.answers.flights import Busy, Flights
from service.http.errors import Problem
from tests.support.redis_app import delete_prefix


@pytest.fixture(params=["local", pytest.param("redis", marks=pytest.mark.redis)])
def gate(request, redis_url, redis_prefix):
    if request.param == "local":
        yield cache.LocalGate()
        return
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    gate = cache.connect(redis_url, prefix)
    yield gate
    gate.close()
    delete_prefix(redis_url, prefix)


def entry(text: str) -> CacheEntry:
    return CacheEntry(f'"{text}"', "application/json", None, text.encode())


class Counting:
    def __init__(self, seconds: float = 0.0, fail: Exception | None = None) -> None:
        self.calls, self.seconds, self.fail = 0, seconds, fail
        self.lock = threading.Lock()

    def __call__(self) -> CacheEntry:
        with self.lock:
            self.calls += 1
        time.sleep(self.seconds)
        if self.fail is not None:
            raise self.fail
        return entry("answer")


def test_requests_of_a_process_share_one_computation(gate, tmp_path):
    flights = Flights(gate, ComputeSlots(tmp_path, 2))
    compute = Counting(0.3)
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        flights.answer("k", compute, endpoint="top_keywords", ttl=60, patience=10))) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert compute.calls == 1
    assert {r[0].body for r in results} == {b"answer"}
    assert sum(computed for _, computed in results) == 20  # this process's flight computed it
    again, computed = flights.answer("k", compute, endpoint="top_keywords", ttl=60, patience=10)
    assert again.body == b"answer" and not computed and compute.calls == 1  # from the cache


@pytest.mark.redis
def test_processes_share_one_fill_lock_and_its_eta(redis_url, redis_prefix, tmp_path):
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    gates = [cache.connect(redis_url, prefix) for _ in range(2)]
    slots = ComputeSlots(tmp_path, 2)
    slots.record("geo_heat", 1.0)
    one, other = (Flights(g, slots) for g in gates)
    compute_one, compute_other = Counting(1.0), Counting(1.0)
    try:
        first = threading.Thread(target=lambda: one.answer("k", compute_one, endpoint="geo_heat", ttl=60, patience=10))
        first.start()
        time.sleep(0.3)
        note = gates[1].lock_note("k")
        eta, pid = note.split()
        assert 0 < float(eta) - time.time() <= 1.5 and int(pid) > 0
        answer, computed = other.answer("k", compute_other, endpoint="geo_heat", ttl=60, patience=10)
        first.join()
        assert answer.body == b"answer" and not computed
        assert (compute_one.calls, compute_other.calls) == (1, 0)
    finally:
        for g in gates:
            g.close()
        delete_prefix(redis_url, prefix)


def test_a_lock_whose_holder_stopped_renewing_is_taken_over(gate, tmp_path):
    # A holder that died: its lock was taken and is never renewed.
    token = gate.try_lock("k", 0.5, f"{time.time() + 1:.3f} 1")
    assert token is not None
    flights = Flights(gate, ComputeSlots(tmp_path, 1), lease_seconds=0.5, renew_seconds=0.1)
    compute = Counting()
    started = time.monotonic()
    answer, computed = flights.answer("k", compute, endpoint="trending", ttl=60, patience=10)
    assert answer.body == b"answer" and computed and compute.calls == 1
    assert time.monotonic() - started < 3


def test_a_holder_keeps_its_lock_alive_while_it_computes(gate, tmp_path):
    flights = Flights(gate, ComputeSlots(tmp_path, 1), lease_seconds=0.5, renew_seconds=0.1)
    compute = Counting(1.5)  # three times the lease
    done = threading.Thread(target=lambda: flights.answer("k", compute, endpoint="trending", ttl=60, patience=10))
    done.start()
    time.sleep(1.0)
    assert gate.try_lock("k", 5) is None, "the lease ran out while its holder was computing"
    done.join()
    assert gate.lock_note("k") is None  # released when done


def test_a_failure_is_the_answer_of_everyone_waiting_for_it(gate, tmp_path):
    flights = Flights(gate, ComputeSlots(tmp_path, 1))
    compute = Counting(0.2, fail=Problem(503, "took too long", headers={"Retry-After": "60"}))
    errors = []

    def ask() -> None:
        try:
            flights.answer("k", compute, endpoint="query", ttl=60, patience=10)
        except Problem as problem:
            errors.append(problem)

    threads = [threading.Thread(target=ask) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert compute.calls == 1 and len(errors) == 5
    assert {e.status_code for e in errors} == {503}
    # Another process (a new Flights on the same gate) gets the stored failure, not a new try.
    other = Flights(gate, ComputeSlots(tmp_path, 1))
    with pytest.raises(Problem) as raised:
        other.answer("k", compute, endpoint="query", ttl=60, patience=10)
    assert raised.value.headers["Retry-After"] == "60" and compute.calls == 1


def test_an_answer_not_expected_in_time_is_refused_at_once_and_still_computed(gate, tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    slots.record("query", 1.0)
    flights = Flights(gate, slots)
    compute = Counting(1.0)
    started = time.monotonic()
    with pytest.raises(Busy) as busy:
        flights.answer("k", compute, endpoint="query", ttl=60, patience=0.2)
    assert time.monotonic() - started < 0.2
    assert busy.value.retry_after == 1
    time.sleep(1.5)  # the computation went on: the retry is answered from the cache
    answer, computed = flights.answer("k", compute, endpoint="query", ttl=60, patience=0.2)
    assert answer.body == b"answer" and not computed and compute.calls == 1


def test_a_request_that_outwaits_its_patience_is_busy(gate, tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    slots.record("query", 0.01)  # expected to be quick, but it is not
    flights = Flights(gate, slots)
    compute = Counting(1.0)
    with pytest.raises(Busy):
        flights.answer("k", compute, endpoint="query", ttl=60, patience=0.3)
    answer, _ = flights.answer("k", compute, endpoint="query", ttl=60, patience=5)
    assert answer.body == b"answer" and compute.calls == 1


class Working(Counting):
    """A computation that does `cpu` seconds of Python work (its time on the clock grows with its
    neighbours)."""

    def __init__(self, cpu: float) -> None:
        super().__init__()
        self.cpu = cpu

    def __call__(self) -> CacheEntry:
        with self.lock:
            self.calls += 1
        until = time.thread_time() + self.cpu
        while time.thread_time() < until:
            sum(range(1000))
        return entry("answer")


def test_a_slower_computation_than_expected_moves_its_eta_on_instead_of_letting_it_pass(gate, tmp_path):
    """The note (every waiter's Retry-After) says when the answer will be there at the pace the
    computation is going, not when a computation of its kind last ended: one that was expected to take
    0.1 s and is still going after 0.8 s says it will be done later than now."""
    slots = ComputeSlots(tmp_path, 1)
    slots.record("query", 0.1, 0.1)
    flights = Flights(gate, slots, lease_seconds=2.0, renew_seconds=0.1)
    compute = Working(1.5)
    done = threading.Thread(target=lambda: flights.answer("k", compute, endpoint="query", ttl=60, patience=30))
    done.start()
    try:
        time.sleep(0.8)
        eta = float(gate.lock_note("k").split()[0])
        assert eta > time.time()
        with pytest.raises(Busy) as busy:  # a waiter told when to come back: not "now"
            flights.answer("k", compute, endpoint="query", ttl=60, patience=0.01)
        assert busy.value.retry_after >= 1
        assert slots.estimate() > 0  # the queue's estimate reads the same from the slot
    finally:
        done.join()
    assert compute.calls == 1


def test_a_computation_records_its_time_and_its_work(gate, tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    flights = Flights(gate, slots)
    flights.answer("k", Working(0.4), endpoint="trending", ttl=60, patience=30)
    other = ComputeSlots(tmp_path, 1)  # another process reads what this one measured
    assert other.expected("trending") >= 0.3
    assert 0.2 <= other.expected_cpu("trending") <= 2.0
