"""The machine's compute slots (service/answers/compute_slots.py): a bound shared by processes, FIFO
order, room left for requests, tickets of the dead removed, and the estimate of the wait."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from service.answers.compute_slots import ComputeSlots


def test_no_more_than_count_at_once_and_in_arrival_order(tmp_path):
    slots = ComputeSlots(tmp_path, 2)
    inside, most, order = [0], [0], []
    lock = threading.Lock()
    release = threading.Event()

    def hold() -> None:
        with slots.slot(1.0):
            release.wait(10)

    def work(n: int) -> None:
        with slots.slot(0.05):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                order.append(n)
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    holders = [threading.Thread(target=hold) for _ in range(2)]
    for thread in holders:
        thread.start()
    time.sleep(0.1)
    threads = []
    for n in range(6):  # each in line before the next comes
        threads.append(threading.Thread(target=work, args=(n,)))
        threads[-1].start()
        deadline = time.monotonic() + 30  # a guard against hanging, not a timing: a loaded machine may take seconds
        while len(slots.queued()) < n + 1:
            assert time.monotonic() < deadline
            time.sleep(0.005)
    release.set()
    for thread in holders + threads:
        thread.join()
    assert most[0] == 2
    # Two run at a time, taken in arrival order: each pair's members may finish in either order.
    assert [sorted(order[i:i + 2]) for i in range(0, 6, 2)] == [[0, 1], [2, 3], [4, 5]]


def _hold(directory: str, ready: str) -> None:
    slots = ComputeSlots(directory, 1)
    with slots.slot(5.0):
        Path(ready).write_text("held")
        time.sleep(60)  # until killed


def test_a_slot_held_by_another_process_counts_and_is_freed_when_it_dies(tmp_path):
    # A file says it holds the slot (no multiprocessing lock: the holder is killed while it may hold one).
    ready = tmp_path / "ready"
    holder = multiprocessing.get_context("spawn").Process(target=_hold, args=(str(tmp_path / "slots"), str(ready)))
    holder.start()
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline and holder.is_alive(), "the other process never held the slot"
            time.sleep(0.02)
        slots = ComputeSlots(tmp_path / "slots", 1)
        assert [expected for _started, expected in slots.running()] == [5.0]
        assert 4.0 < slots.estimate() <= 5.0
        holder.kill()  # never releases: the kernel does
        holder.join()
        started = time.monotonic()
        with slots.slot(0.1) as waited:
            assert waited < 1.0
        assert time.monotonic() - started < 1.0
    finally:
        if holder.is_alive():
            holder.kill()
        holder.join(timeout=10)


def test_background_work_leaves_a_slot_free(tmp_path):
    slots = ComputeSlots(tmp_path, 2)
    taken = threading.Event()
    done = threading.Event()

    def background() -> None:
        with slots.slot(0.1, leave_free=1):
            taken.set()

    with slots.slot(1.0):  # a request holds one of two: the background may not take the other
        thread = threading.Thread(target=lambda: (background(), done.set()))
        thread.start()
        assert not taken.wait(0.3)
    assert done.wait(5)
    thread.join()


def test_requests_overtake_background_work_in_line(tmp_path):
    slots = ComputeSlots(tmp_path, 2)
    order = []
    release = threading.Event()

    def hold() -> None:
        with slots.slot(1.0):
            release.wait(5)

    def one(name: str, leave_free: int) -> None:
        with slots.slot(0.1, leave_free=leave_free):
            order.append(name)

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.05)
    background = threading.Thread(target=one, args=("background", 1))
    background.start()
    time.sleep(0.1)  # in line first, waiting for two free slots
    request = threading.Thread(target=one, args=("request", 0))
    request.start()
    request.join(timeout=2)
    assert order == ["request"], "a request waited behind background work while a slot was free"
    release.set()
    background.join(timeout=5)
    holder.join()
    assert order == ["request", "background"]


def test_the_estimate_schedules_the_running_and_the_queued(tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    queued_at = []
    release = threading.Event()

    def first() -> None:
        with slots.slot(2.0):
            release.wait(5)

    holder = threading.Thread(target=first)
    holder.start()
    time.sleep(0.1)
    # a second queues behind the 2 s computation: a third would start after 2 + 3 s
    ticket_thread = threading.Thread(target=lambda: _queue_one(slots, 3.0, queued_at, release))
    ticket_thread.start()
    time.sleep(0.2)
    assert slots.queued() == [3.0]
    assert 4.5 < slots.estimate() <= 5.0
    assert queued_at and 1.5 < queued_at[0] <= 2.0  # the queued one was told it starts in about 2 s
    release.set()
    holder.join()
    ticket_thread.join()
    assert slots.queued() == [] and slots.estimate() == 0.0


def _queue_one(slots: ComputeSlots, expected: float, queued_at: list, release: threading.Event) -> None:
    with slots.slot(expected, on_queued=queued_at.append):
        pass


def test_a_dead_ticket_ahead_is_removed(tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    # A ticket left by a process that died: its file is there, nobody holds its lock.
    dead = tmp_path / "queue" / f"{1:020d}-999999-0-r-1000"
    dead.write_text("")
    with slots.slot(0.1) as waited:  # the slot is free but the dead ticket is first in line
        assert waited < 2.0
    assert not dead.exists()


def test_durations_are_shared_through_the_directory(tmp_path):
    one, other = ComputeSlots(tmp_path, 2), ComputeSlots(tmp_path, 2)
    assert one.expected("geo_heat") == 1.0  # nothing measured yet
    one.record("geo_heat", 3.25)
    time.sleep(1.05)  # read at most once a second
    assert other.expected("geo_heat") == 3.25


def test_slots_need_a_count():
    with pytest.raises(ValueError):
        ComputeSlots("/tmp", 0)


def test_a_held_slot_is_an_flock_others_see(tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    with slots.slot(1.0):
        fd = os.open(tmp_path / "slot-0", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)


def test_a_running_computation_keeps_its_expectation_current(tmp_path):
    """A holder slowed by its neighbours says so (`report`), and the queue's estimate follows."""
    slots = ComputeSlots(tmp_path, 1)
    with slots.slot(1.0, name="k"):
        assert 0.5 < slots.estimate() <= 1.01
        slots.report("k", 10.0)
        assert 9.0 < slots.estimate() <= 10.01  # written to the millisecond
        assert 9.0 < ComputeSlots(tmp_path, 1).estimate() <= 10.01  # other processes read it too
        slots.report("nobody", 99.0)  # no slot held by that name: nothing changes
        assert slots.estimate() <= 10.01
    assert slots.estimate() == 0.0
    slots.report("k", 5.0)  # released: nothing to report
    assert slots.estimate() == 0.0


def test_durations_written_before_the_work_was_measured_still_read(tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    (tmp_path / "durations" / "geo_heat").write_text("2.500")  # a file of an earlier version: no CPU seconds
    assert slots.expected("geo_heat") == 2.5 and slots.expected_cpu("geo_heat") is None


def test_a_queued_computation_knows_when_its_turn_comes(tmp_path):
    slots = ComputeSlots(tmp_path, 1)
    assert slots.starts_in("k") is None  # not queued
    with slots.slot(2.0, name="first"):
        seen: list[float | None] = []

        def wait_for_turn() -> None:
            with slots.slot(1.0, name="k", on_queued=lambda _start_in: seen.append(slots.starts_in("k"))):
                pass

        waiter = threading.Thread(target=wait_for_turn)
        waiter.start()
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen and 0.0 < seen[0] <= 2.01  # behind the running one's 2 s
        slots.report("first", 6.0)  # the running one slowed down: the turn comes later
        assert 4.0 < slots.starts_in("k") <= 6.01
    waiter.join()
    assert slots.starts_in("k") is None  # its turn came
