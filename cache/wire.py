"""A lean Redis connection for the request path: one command at a time, answers parsed by hiredis.

Why not a `redis.Redis` client: every API request makes one Redis call, so the client's own
cost is part of every request; this connection costs about a third of a `redis.Redis` client's
CPU per call (figures in docs/benchmarks.md, section 7). The difference is Python bookkeeping (pool, retry wrapper, argument inspection) and, for sockets with a Python-level
timeout, a `poll()` before every send and every receive. Here the socket is blocking and the
kernel enforces the timeouts (SO_RCVTIMEO/SO_SNDTIMEO), so a call is one `send` and one `recv`.

What it keeps from the libraries: redis-py parses the URL (redis://, rediss://, unix://, user,
password, database) and supplies the exception classes; hiredis packs commands and parses
answers. With TLS (rediss://) the socket keeps Python's timeout instead, as TLS reads need it.

Errors: a Redis error answer raises `redis.ResponseError` (`NoScriptError` for NOSCRIPT) and
leaves the connection usable. Anything else closes it (the stream may be out of step) and
raises `redis.TimeoutError` or `redis.ConnectionError`; the next call connects again.

Waiting for the answer: a blocking receive, or see `ReplyWait` (poll the socket briefly first; off by default).
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import ssl
import struct
import time
import weakref

import hiredis
import redis
from redis.connection import parse_url

_BUFFER_BYTES = 64 * 1024

_open_after_fork: weakref.WeakSet[Wire] = weakref.WeakSet()


def _forget_all_after_fork() -> None:
    for wire in list(_open_after_fork):
        wire._forget_after_fork()


os.register_at_fork(after_in_child=_forget_all_after_fork)


class ReplyWait:
    """Receives the first bytes of an answer: polls the socket for up to `spin_seconds`, then
    sleeps on it (a blocking receive, bounded by the connection's timeout).

    Why: a request waits for Redis once, and Redis usually answers within tens of microseconds
    when it is near (same host, same rack). A blocking receive then costs more than the wait
    itself: the worker is put to sleep and woken again, two context switches, which on a
    virtualised host are among the most expensive things a request does (a loopback PING takes
    about three times as long when sleeping; docs/benchmarks.md). Polling for a
    short, bounded time keeps the worker on its CPU when the answer comes quickly.

    When answers come later than `spin_seconds` (a distant Redis, an overloaded host), polling
    only burns CPU, so it pauses for `PAUSE_CALLS` calls, then tries again: after
    `MISSES_BEFORE_PAUSE` late answers in a row (a Redis that is far away is found quickly), or
    when more than `MOST_MISSES_PER_ROUND` of a round of `ROUND` polls were late (polling that
    pays only now and then). `spin_seconds=0` never polls, and is the default
    (cache.REDIS_SPIN_SECONDS): under load, a polling worker keeps its core while Redis and the
    other workers wait for one, so polling pays only with no more workers than cores.
    """

    MISSES_BEFORE_PAUSE = 8
    ROUND = 64
    MOST_MISSES_PER_ROUND = 32
    PAUSE_CALLS = 1000

    __slots__ = ("spin_seconds", "_run", "_round_polls", "_round_misses", "_paused", "polled", "caught", "missed")

    def __init__(self, spin_seconds: float) -> None:
        if not (math.isfinite(spin_seconds) and spin_seconds >= 0):
            raise ValueError(f"spin_seconds must be a finite number >= 0, got {spin_seconds!r}")
        self.spin_seconds = spin_seconds
        self._run = 0             # late answers in a row
        self._round_polls = 0     # polls in the current round ...
        self._round_misses = 0    # ... and how many of them were late
        self._paused = 0          # calls left that do not poll
        self.polled = self.caught = self.missed = 0  # counters, for tests and diagnostics

    def first_bytes(self, sock: socket.socket, buffer: bytearray) -> int:
        if self._paused or not self.spin_seconds:
            if self._paused:
                self._paused -= 1
            return sock.recv_into(buffer)
        self.polled += 1
        self._round_polls += 1
        deadline = time.perf_counter() + self.spin_seconds
        while True:
            try:
                received = sock.recv_into(buffer, 0, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if time.perf_counter() < deadline:
                    continue
                break
            self.caught += 1
            self._run = 0
            self._judge()
            return received
        self.missed += 1
        self._run += 1
        self._round_misses += 1
        self._judge()
        return sock.recv_into(buffer)

    def _judge(self) -> None:
        pause = self._run >= self.MISSES_BEFORE_PAUSE
        if self._round_polls >= self.ROUND:
            pause = pause or self._round_misses > self.MOST_MISSES_PER_ROUND
            self._round_polls = self._round_misses = 0
        if pause:
            self._run = self._round_polls = self._round_misses = 0
            self._paused = self.PAUSE_CALLS


class Wire:
    def __init__(self, url: str, timeout_seconds: float, spin_seconds: float = 0.0) -> None:
        if not (math.isfinite(timeout_seconds) and timeout_seconds >= 0.001):
            raise ValueError(f"timeout_seconds must be at least 0.001, got {timeout_seconds!r}")
        options = parse_url(url)
        self._tls = options.get("connection_class") is redis.connection.SSLConnection
        self._path: str | None = options.get("path")
        self.host: str = options.get("host", "localhost")
        self.port: int = int(options.get("port", 6379))
        self.db: int = int(options.get("db", 0) or 0)
        self._username: str | None = options.get("username")
        self._password: str | None = options.get("password")
        # TLS: the server's certificate is verified (against ?ssl_ca_certs=<file> if given, else
        # the system's CAs) unless the URL says ?ssl_cert_reqs=none (self-signed managed Redis).
        self._verify = str(options.get("ssl_cert_reqs", "required")).lower() not in ("none", "cert_none")
        self._ca_file: str | None = options.get("ssl_ca_certs")
        self.timeout_seconds = timeout_seconds
        # TLS sockets take no receive flags (and decrypt in user space): they always block.
        # Polling never outlasts the timeout, so a hanging Redis still costs one timeout.
        self.reply_wait = ReplyWait(0.0 if self._tls else min(spin_seconds, timeout_seconds))
        self._sock: socket.socket | None = None
        self._reader: hiredis.Reader | None = None
        self._buffer = bytearray(_BUFFER_BYTES)
        _open_after_fork.add(self)

    @property
    def path(self) -> str | None:
        return self._path

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def __repr__(self) -> str:  # never the password
        where = self._path or f"{self.host}:{self.port}"
        return f"<Wire {'rediss' if self._tls else 'redis'} {where} db={self.db}>"

    # -- connecting -------------------------------------------------------------------------

    def connect(self) -> None:
        if self._sock is not None:
            return
        try:
            self._sock = self._open()
            self._reader = hiredis.Reader(replyError=redis.ResponseError, protocolError=redis.InvalidResponse)
            if self._password:
                self._handshake(("AUTH", self._username, self._password) if self._username else ("AUTH", self._password))
            if self.db:
                self._handshake(("SELECT", self.db))
        except BaseException:
            self.close()
            raise

    def _open(self) -> socket.socket:
        timeout = self.timeout_seconds
        try:
            if self._path:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(timeout)
                try:
                    sock.connect(self._path)
                except BaseException:
                    sock.close()
                    raise
            else:
                sock = socket.create_connection((self.host, self.port), timeout=timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls:
                context = ssl.create_default_context(cafile=self._ca_file)
                if not self._verify:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                return context.wrap_socket(sock, server_hostname=self.host)
        except TimeoutError as exc:
            raise redis.TimeoutError(f"Timeout connecting to Redis at {self!r}") from exc
        except OSError as exc:
            raise redis.ConnectionError(f"Cannot connect to Redis at {self!r}: {exc.strerror or exc}") from exc
        # Blocking, with the timeouts in the kernel: no poll() before each send and receive.
        seconds = int(timeout)
        interval = struct.pack("ll", seconds, int((timeout - seconds) * 1_000_000))
        sock.settimeout(None)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, interval)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, interval)
        return sock

    def _handshake(self, command: tuple) -> None:
        try:
            self.call(*command)
        except redis.ResponseError as exc:
            raise redis.AuthenticationError(str(exc)) from None

    def close(self) -> None:
        sock, self._sock, self._reader = self._sock, None, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def _forget_after_fork(self) -> None:
        """In a forked child: the socket is the parent's conversation, never ours to use. Closing
        the child's copy of the descriptor leaves the parent's connection open."""
        self.close()
        self.reply_wait = ReplyWait(self.reply_wait.spin_seconds)

    # -- calling ----------------------------------------------------------------------------

    def call(self, *args: str | bytes | int | float):
        """Send one command, return its answer (bytes, int, list, None)."""
        if self._sock is None:
            self.connect()
        sock, reader, buffer = self._sock, self._reader, self._buffer
        assert sock is not None and reader is not None  # connected
        try:
            # hiredis's stub types the command as a 1-tuple (it takes any length)
            sock.sendall(hiredis.pack_command(args))  # type: ignore[arg-type]
            received = self.reply_wait.first_bytes(sock, buffer)
            deadline = None  # a long answer may take several receives, all within one timeout
            while True:
                if not received:
                    raise redis.ConnectionError("Redis closed the connection")
                reader.feed(buffer, 0, received)  # type: ignore[arg-type]  # hiredis's stub: it takes any buffer
                answer = reader.gets()
                if answer is not False:
                    break
                if deadline is None:
                    deadline = time.monotonic() + self.timeout_seconds
                elif time.monotonic() > deadline:
                    raise TimeoutError("the answer is arriving too slowly")
                received = sock.recv_into(buffer)
        except (TimeoutError, BlockingIOError) as exc:  # BlockingIOError: SO_RCVTIMEO/SO_SNDTIMEO ran out
            self.close()
            raise redis.TimeoutError(f"Timeout talking to Redis at {self!r}") from exc
        except OSError as exc:
            self.close()
            raise redis.ConnectionError(f"Lost the connection to Redis at {self!r}: {exc.strerror or exc}") from exc
        except redis.RedisError:
            self.close()
            raise
        if isinstance(answer, redis.ResponseError):
            message = str(answer)
            if message.startswith("NOSCRIPT"):
                raise redis.exceptions.NoScriptError(message)
            raise answer
        return answer
