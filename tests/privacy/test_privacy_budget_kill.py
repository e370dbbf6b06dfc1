"""The privacy ledger under kill -9 (issue 41: "a worker killed mid-request neither double-charges
nor hands out a free cell"). A process charges answers against the real Redis as a web worker does
(charge, then show), and is killed at random moments; afterwards the ledger is consistent (what it
spent is exactly what its answers were charged), every answer the process showed was charged, and
an answer charged by a process killed before showing it costs nothing when asked again."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest
import redis

import cache

pytestmark = pytest.mark.redis

WORKER = textwrap.dedent("""
    import sys
    import cache
    gate = cache.connect(sys.argv[1], sys.argv[2])
    for i in range(100_000):
        spend = gate.charge("sub7:2026-11", f"answer-{i}", 1_000 + i % 7, 10**12, 3600)
        if spend.allowed:
            print(f"answer-{i}", flush=True)  # shown only after the charge returned
""")


@pytest.mark.parametrize("seed", range(4))
def test_a_worker_killed_at_any_moment_leaves_the_ledger_exact(redis_url, redis_prefix, seed):
    prefix = f"{redis_prefix}kill-{uuid.uuid4().hex[:8]}:"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    worker = subprocess.Popen([sys.executable, "-c", WORKER, redis_url, prefix], stdout=subprocess.PIPE,
                              text=True, cwd=root, env={**os.environ, "PYTHONPATH": root})
    shown = []
    try:
        wanted = random.Random(seed).randint(20, 400)
        assert worker.stdout is not None
        while len(shown) < wanted:
            line = worker.stdout.readline()
            assert line, "the worker stopped before it was killed"
            shown.append(line.strip())
        worker.send_signal(signal.SIGKILL)  # mid-loop: between, or inside, charges
        worker.wait(10)
        shown += [line.strip() for line in worker.stdout.read().splitlines()]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker.stdout.close()
    raw = redis.Redis.from_url(redis_url)
    try:
        ledger = {k.decode(): int(v) for k, v in raw.hgetall(f"{prefix}privacy:sub7:2026-11").items()}
    finally:
        raw.close()
    charged = {name.removeprefix("a:"): amount for name, amount in ledger.items() if name.startswith("a:")}
    assert ledger["spent"] == sum(charged.values())        # no partial charge
    assert set(shown) <= set(charged)                       # nothing shown uncharged
    assert len(charged) - len(shown) <= 1                   # at most the one cut between charge and show
    gate = cache.connect(redis_url, prefix)
    try:
        for answer, amount in charged.items():              # asked again: never charged twice
            assert gate.charge("sub7:2026-11", answer, amount, 10**12, 3600).charged == 0
        assert gate.spent("sub7:2026-11") == ledger["spent"]
    finally:
        gate.close()
        raw = redis.Redis.from_url(redis_url)
        raw.delete(f"{prefix}privacy:sub7:2026-11")
        raw.close()
