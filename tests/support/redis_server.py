"""Finding or starting a Redis for the test run.

Order: SIGNALS_TEST_REDIS_URL if set; else the machine's Redis on 127.0.0.1:6379; else a
throwaway `redis-server` on a free port. Each run uses its own key prefix, so runs never see
each other's keys. `ThrowawayRedis` can also be stopped and restarted by tests of the
Redis-down path.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


class ThrowawayRedis:
    """A redis-server child process that keeps nothing on disk."""

    def __init__(self, port: int | None = None, *, args: tuple[str, ...] = (), url: str | None = None) -> None:
        """`args`: more redis-server options (a password, a Unix socket, TLS); `url`: how to
        reach it then, if not plain TCP on `port`."""
        self.binary = shutil.which("redis-server")
        if not self.binary:
            raise RuntimeError("redis-server is not installed")
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="signals-redis-")
        self.args = args
        self._url = url
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return self._url or f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> ThrowawayRedis:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not answers(self.url):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


def run_prefix() -> str:
    return f"signals-test-{os.getpid()}-{uuid.uuid4().hex[:8]}:"
