"""Slow and unfinished requests cost their client a connection, never a worker (issue 21, part 1).

Over the real gunicorn of the Procfile (one worker, its threads): clients that stop in the middle
of their body or their headers get 408 problem+json after SIGNALS_CLIENT_TIMEOUT_SECONDS, and
meanwhile another client is served at once. Below HTTP: a TimedSocket gives up on a peer that
reads nothing.
"""

from __future__ import annotations

import concurrent.futures
import json
import socket
import time

import httpx
import pytest

from service.server.gunicorn_worker import StalledClient, TimedSocket
from tests.support.fixture_data import write_fixture_store
from tests.support.processes import create_key, gunicorn
from tests.support.spec_table import BASE

TIMEOUT = 2  # SIGNALS_CLIENT_TIMEOUT_SECONDS for these servers


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("slow-clients") / "data"
    write_fixture_store(data_dir)
    key = create_key(data_dir, "professional")
    with gunicorn(data_dir, WEB_CONCURRENCY="1", SIGNALS_WEB_THREADS="4",
                  SIGNALS_CLIENT_TIMEOUT_SECONDS=str(TIMEOUT)) as (base, log):
        yield base, key, int(base.rsplit(":", 1)[1])
    assert "Traceback" not in log[0] and key not in log[0], log[0][-5000:]


def _read_answer(conn: socket.socket) -> tuple[float, bytes]:
    """Seconds until the server's answer began, and everything it sent until it closed."""
    started = time.monotonic()
    conn.settimeout(TIMEOUT * 5)
    chunks = [conn.recv(65536)]
    answered_in = time.monotonic() - started
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return answered_in, b"".join(chunks)


def _unfinished_body(port: int, key: str) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(f"POST {BASE}/query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"window\":".encode())
    return conn


def _unfinished_headers(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(f"GET {BASE}/top-keywords HTTP/1.1\r\nHost: x\r\nAuthori".encode())
    return conn


def _status_and_problem(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"application/problem+json" in head, answer
    return int(head.split(b" ", 2)[1]), json.loads(body)


@pytest.mark.process
def test_unfinished_bodies_and_headers_get_408_while_others_are_served(server):
    """More stalled connections than the worker has threads: another client is still served at
    once (a stalled client holds a thread only until its timeout), and each stalled client hears
    408 problem+json after about the timeout."""
    base, key, port = server
    stalled = [_unfinished_body(port, key) for _ in range(4)] + [_unfinished_headers(port) for _ in range(2)]
    time.sleep(0.2)
    started = time.monotonic()
    answer = httpx.get(f"{base}{BASE}/top-keywords", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    served_in = time.monotonic() - started
    assert answer.status_code == 200
    assert served_in < TIMEOUT + 1.5, served_in  # at worst one timeout, never the 60 s of a sync worker
    with concurrent.futures.ThreadPoolExecutor(len(stalled)) as pool:
        answers = list(pool.map(_read_answer, stalled))
    for (seconds, raw), kind in zip(answers, ["body"] * 4 + ["headers"] * 2, strict=True):
        status, problem = _status_and_problem(raw)
        assert status == 408, (kind, raw)
        assert problem["status"] == 408 and problem["type"].startswith("urn:signals:problem:"), problem
        assert seconds < TIMEOUT * 3, (kind, seconds)
    for conn in stalled:
        conn.close()


@pytest.mark.process
def test_a_client_stalled_in_its_body_does_not_delay_an_unrelated_request(server):
    base, key, port = server
    stalled = _unfinished_body(port, key)
    try:
        time.sleep(0.2)
        started = time.monotonic()
        answer = httpx.get(f"{base}{BASE}/top-keywords", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert answer.status_code == 200 and time.monotonic() - started < 1.5
        seconds, raw = _read_answer(stalled)
        assert _status_and_problem(raw)[0] == 408
        assert TIMEOUT * 0.8 < seconds + 0.2 < TIMEOUT * 3
    finally:
        stalled.close()


@pytest.mark.process
def test_a_slow_but_steady_body_is_read_whole(server):
    """The timeout is on progress, not on the whole request: a body sent in pieces, each within
    the timeout, is answered normally."""
    base, key, port = server
    body = json.dumps({"window": "24h", "limit": 3}).encode()
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(f"POST {BASE}/query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        for start in range(0, len(body), 8):
            time.sleep(TIMEOUT / 4)
            conn.sendall(body[start:start + 8])
        _, raw = _read_answer(conn)
    assert raw.startswith(b"HTTP/1.1 200"), raw[:300]


def test_a_timed_socket_gives_up_on_a_peer_that_reads_nothing():
    """A slow reader of a large answer: the write stops after the timeout with StalledClient (a
    ConnectionResetError, which gunicorn takes as the client gone), and the thread is free."""
    ours, theirs = socket.socketpair()
    timed = TimedSocket.adopt(ours, 0.3)
    timed.setblocking(True)  # what gunicorn calls before each request: blocking, with the timeout
    assert timed.gettimeout() == 0.3
    started = time.monotonic()
    with pytest.raises(StalledClient):
        timed.sendall(b"x" * (64 << 20))
    assert time.monotonic() - started < 3 and timed.stalled and timed.answered
    with pytest.raises(ConnectionResetError):
        timed.recv(10)
    timed.close()
    theirs.close()


@pytest.mark.process
def test_test_pings_to_a_silent_receiver_hold_no_web_worker(tmp_path):
    """Test deliveries are queued for the worker process: pings to a receiver that never answers
    cost the web process nothing, and another subscription is served at once (one worker, one
    thread: anything held would show)."""
    data_dir = tmp_path / "data"
    write_fixture_store(data_dir)
    owner, other = create_key(data_dir, "observer"), create_key(data_dir, "observer")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections, never answers
    try:
        with gunicorn(data_dir, WEB_CONCURRENCY="1", SIGNALS_WEB_THREADS="1",
                      SIGNALS_WEBHOOK_ALLOW_PRIVATE="1") as (base, _log), httpx.Client(base_url=base, timeout=30) as http:
            hook = http.post("/api/v1/account/webhooks", headers={"Authorization": f"Bearer {owner}"}, json={
                "url": f"http://127.0.0.1:{silent.getsockname()[1]}/hook", "window": "24h", "dimension": "keyword",
                "threshold_pct": 50, "cooldown_minutes": 60}).json()
            started = time.monotonic()
            pings = [http.post(f"/api/v1/account/webhooks/{hook['id']}/test", headers={"Authorization": f"Bearer {owner}"})
                     for _ in range(4)]
            assert [p.status_code for p in pings] == [202] * 4
            answer = http.get(f"{BASE}/top-keywords", headers={"Authorization": f"Bearer {other}"})
            assert answer.status_code == 200
            assert time.monotonic() - started < 3  # it was 9-10 s per ping when the web worker sent them
    finally:
        silent.close()
