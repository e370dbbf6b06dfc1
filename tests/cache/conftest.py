"""cache/: the gate (rate limits and cached bodies) against the real Redis and its in-process twin,
the lean Redis connection (wire), Redis outages, and response caching and rate limits over HTTP
(the root conftest's `redis_url`, `redis_prefix`, `rclient`)."""

from __future__ import annotations

import os
import shutil
import signal

import pytest

from tests.support.redis_server import ThrowawayRedis


@pytest.fixture
def throwaway_redis():
    """A redis-server of the test's own, to stop, hang (SIGSTOP) and restart."""
    server = ThrowawayRedis().start()
    yield server
    if server.process and server.process.poll() is None:
        os.kill(server.process.pid, signal.SIGCONT)
    server.stop()
    shutil.rmtree(server.dir, ignore_errors=True)
