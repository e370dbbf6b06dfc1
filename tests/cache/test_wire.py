"""cache.wire.Wire, the request path's Redis connection, against real redis-server processes:
answers of every type, errors that keep or drop the connection, timeouts, reconnection,
passwords and databases from the URL, Unix sockets and TLS."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import redis

from cache import Wire, redis_connection
from tests.support.redis_server import ThrowawayRedis, free_port

pytestmark = pytest.mark.redis


@pytest.fixture
def wire(redis_url, redis_prefix):
    connection = redis_connection(redis_url)
    yield connection, f"{redis_prefix}wire-{uuid.uuid4().hex[:6]}:"
    connection.close()


def test_answers_of_every_type(wire):
    connection, prefix = wire
    assert connection.call("PING") == b"PONG"
    assert connection.call("SET", prefix + "k", b"\x00bytes\xff", "EX", 60) == b"OK"
    assert connection.call("GET", prefix + "k") == b"\x00bytes\xff"
    assert connection.call("GET", prefix + "missing") is None
    assert connection.call("INCRBY", prefix + "n", 41) == 41
    assert connection.call("EVAL", "return {1, 'two', false}", 0) == [1, b"two", None]
    big = os.urandom(300_000)  # larger than one receive buffer
    connection.call("SET", prefix + "big", big, "EX", 60)
    assert connection.call("GET", prefix + "big") == big
    connection.call("DEL", prefix + "k", prefix + "n", prefix + "big")


def test_an_error_answer_raises_and_keeps_the_connection(wire):
    connection, prefix = wire
    with pytest.raises(redis.ResponseError, match="unknown command"):
        connection.call("NO-SUCH-COMMAND")
    with pytest.raises(redis.exceptions.NoScriptError):
        connection.call("EVALSHA", "0" * 40, 0)
    assert connection.connected and connection.call("PING") == b"PONG"  # still in step


def test_a_closed_connection_fails_once_then_reconnects(throwaway_redis):
    connection = redis_connection(throwaway_redis.url)
    assert connection.call("CLIENT", "SETNAME", "to-be-killed") == b"OK"
    admin = redis.Redis.from_url(throwaway_redis.url)
    admin.client_kill_filter(_type="normal", skipme=True)
    with pytest.raises(redis.ConnectionError):
        connection.call("PING")
    assert not connection.connected
    assert connection.call("PING") == b"PONG"
    admin.close()
    connection.close()


def test_a_hanging_server_costs_one_timeout(throwaway_redis):
    connection = redis_connection(throwaway_redis.url)
    connection.call("PING")
    os.kill(throwaway_redis.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(redis.TimeoutError):
            connection.call("PING")
        assert time.monotonic() - started < 1.0
        assert not connection.connected  # the late answer must never be read as the next one's
    finally:
        os.kill(throwaway_redis.process.pid, signal.SIGCONT)
    assert connection.call("PING") == b"PONG"
    connection.close()


def test_nothing_listening_is_a_connection_error():
    connection = Wire(f"redis://127.0.0.1:{free_port()}/0", 0.25)
    with pytest.raises(redis.ConnectionError):
        connection.call("PING")


def test_password_and_database_from_the_url():
    password = uuid.uuid4().hex
    port = free_port()
    protected = ThrowawayRedis(port, args=("--requirepass", password),
                               url=f"redis://:{password}@127.0.0.1:{port}/3").start()
    try:
        connection = redis_connection(protected.url)
        connection.call("SET", "which-db", b"three")
        for db, expected in ((3, b"three"), (0, None)):
            admin = redis.Redis(port=port, password=password, db=db)
            assert admin.get("which-db") == expected
            admin.close()
        connection.close()
        wrong = redis_connection(f"redis://:wrong@127.0.0.1:{port}/0")
        with pytest.raises(redis.AuthenticationError):
            wrong.call("PING")
        assert password not in repr(wrong)
    finally:
        protected.stop()


def test_unix_socket(tmp_path):
    path = tmp_path / "redis.sock"
    unix = ThrowawayRedis(args=("--port", "0", "--unixsocket", str(path), "--unixsocketperm", "700"),
                          url=f"unix://{path}?db=1").start()
    try:
        connection = redis_connection(unix.url)
        assert connection.call("PING") == b"PONG"
        connection.close()
    finally:
        unix.stop()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)
    return folder / "cert.pem", folder / "key.pem"


def test_tls_verifies_the_server(certificate):
    cert, key = certificate
    port = free_port()
    secure = ThrowawayRedis(port, args=("--port", "0", "--tls-port", str(port), "--tls-cert-file", str(cert),
                                        "--tls-key-file", str(key), "--tls-auth-clients", "no"),
                            url=f"rediss://localhost:{port}/0?ssl_cert_reqs=none")
    try:
        secure.start()
    except RuntimeError:
        pytest.skip("this redis-server was built without TLS")
    try:
        trusted = redis_connection(f"rediss://localhost:{port}/0?ssl_ca_certs={cert}")
        assert trusted.call("PING") == b"PONG"
        trusted.close()
        unverified = redis_connection(f"rediss://localhost:{port}/0?ssl_cert_reqs=none")
        assert unverified.call("PING") == b"PONG"
        unverified.close()
        with pytest.raises(redis.ConnectionError):  # self-signed, not trusted: refused
            redis_connection(f"rediss://localhost:{port}/0").call("PING")
    finally:
        secure.stop()


def test_an_answer_that_trickles_in_costs_one_timeout_not_more():
    # A server that answers one byte every 0.15 s: each receive gets something before the 0.25 s
    # receive timeout, but the whole answer would take over a second.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(1024)
            for byte in b"$8\r\ntrickled\r\n":
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.15)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    connection = Wire(f"redis://127.0.0.1:{port}/0", 0.25)
    started = time.monotonic()
    with pytest.raises(redis.TimeoutError):
        connection.call("GET", "slow")
    assert time.monotonic() - started < 0.8
    assert not connection.connected
    listener.close()
    server.join(timeout=5)
