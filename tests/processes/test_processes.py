"""The real thing: `python -m service` in a subprocess, and the Procfile's web process (gunicorn,
several workers) answering over HTTP."""

from __future__ import annotations

import threading
import time
import types

import httpx
import pytest
import redis

from tests.support.fixture_data import write_fixture_store
from tests.support.processes import ROOT, cli, gunicorn
from tests.support.secret import TEST_SECRET


def test_cli_creates_a_key_on_the_last_line(tmp_path):
    result = cli(tmp_path, "keys", "create", "--tier", "analyst")
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip().splitlines()[-1]
    assert key.startswith("sig_live_")
    listed = cli(tmp_path, "keys", "list")
    assert listed.returncode == 0 and key not in listed.stdout and key[:16] in listed.stdout
    assert cli(tmp_path, "keys", "create", "--tier", "gold").returncode == 2


def test_cli_without_a_command_is_a_usage_error(tmp_path):
    result = cli(tmp_path)
    assert result.returncode == 2 and "usage" in result.stderr.lower()


@pytest.mark.process
def test_gunicorn_from_the_procfile_serves_the_api(tmp_path):
    data_dir = tmp_path / "data"
    write_fixture_store(data_dir)
    key = cli(data_dir, "keys", "create", "--tier", "analyst").stdout.strip().splitlines()[-1]
    with gunicorn(data_dir, WEB_CONCURRENCY="2") as (base, log):
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
            assert http.get("/healthz").json() == {"status": "ok"}
            ready = http.get("/readyz").json()
            assert ready["status"] == "ready" and ready["checks"]["data"]["loaded"] is True
            assert "events" not in ready["checks"]["data"]  # no exact counts outside the privacy stage
            top = http.get("/api/v1/signals/top-keywords", params={"window": "30d"})
            assert top.status_code == 200 and top.json()["keywords"]
            query = http.post("/api/v1/signals/query", json={"window": "90d", "group_by": ["country"]})
            assert query.status_code == 200 and query.json()["results"]
            assert http.get("/api/v1/signals/top-keywords", headers={"Authorization": ""}).status_code == 401
            assert http.get("/api/v1/openapi").json()["openapi"].startswith("3.1")
    output = log[0]
    assert key not in output, "the API key must never be logged"
    assert "Traceback" not in output, output


@pytest.mark.process
@pytest.mark.redis
def test_concurrent_clients_on_several_workers_never_exceed_the_limit(tmp_path, redis_url, redis_prefix):
    data_dir = tmp_path / "data"
    write_fixture_store(data_dir)
    key = cli(data_dir, "keys", "create", "--tier", "observer").stdout.strip().splitlines()[-1]
    prefix = f"{redis_prefix}gunicorn:"
    with gunicorn(data_dir, WEB_CONCURRENCY="3", REDIS_URL=redis_url, SIGNALS_REDIS_PREFIX=prefix) as (base, _):
        statuses: list[int] = []
        remaining: list[int] = []
        lock = threading.Lock()

        def client_loop() -> None:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
                for _ in range(15):
                    result = http.get("/api/v1/signals/top-keywords")
                    with lock:
                        statuses.append(result.status_code)
                        remaining.append(int(result.headers["x-ratelimit-remaining"]))

        started = time.monotonic()
        threads = [threading.Thread(target=client_loop) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    assert elapsed < 60, "all 90 requests must fall in one 60-second span for this check to mean anything"
    assert statuses.count(200) == 30 and statuses.count(429) == 60
    assert min(remaining) == 0 and max(remaining) == 29
    client = redis.Redis.from_url(redis_url)
    for stale in client.scan_iter(f"{prefix}*"):
        client.delete(stale)
    client.close()


@pytest.mark.parametrize("env, expected", [
    ({}, 1),                                        # in-process limits: one worker, or limits multiply
    ({"REDIS_URL": "redis://127.0.0.1:6379/0"}, None),  # shared limits: cores + 1
    ({"WEB_CONCURRENCY": "3"}, 3),
])
def test_gunicorn_worker_count(monkeypatch, tmp_path, env, expected):
    import multiprocessing
    import runpy

    for name in ("REDIS_URL", "WEB_CONCURRENCY", "PROMETHEUS_MULTIPROC_DIR"):  # the file sets the last one
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SIGNALS_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("SIGNALS_SECRET", TEST_SECRET)  # without it on_starting refuses (test_secret.py)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert config["workers"] == (expected or multiprocessing.cpu_count() + 1)
    assert config["preload_app"] is False
    for running in (config["workers"], 4):  # 4: as if `-w 4` overrode the file
        warnings: list = []
        config["on_starting"](types.SimpleNamespace(cfg=types.SimpleNamespace(workers=running),
                                                    log=types.SimpleNamespace(warning=lambda *a, sink=warnings: sink.append(a))))
        per_process_limits = not env.get("REDIS_URL") and running > 1
        assert bool(warnings) == per_process_limits  # several workers without Redis: said at start


@pytest.mark.process
def test_two_api_instances_do_not_share_a_control_socket(tmp_path):
    """gunicorn 27's control socket is one path per user by default: a second instance took it, and
    stopping the second removed the first one's (issue 42). Each instance has its own, in its run
    directory, named by its port; stopping one leaves the other's."""
    data_dir = tmp_path / "data"
    write_fixture_store(data_dir)
    home = tmp_path / "home"  # where gunicorn's per-user default would go
    home.mkdir()
    run_dir = data_dir / "run"
    with gunicorn(data_dir, HOME=str(home)) as (first, _log):
        first_socket = run_dir / f"gunicorn-{first.rsplit(':', 1)[1]}.ctl"
        with gunicorn(data_dir, HOME=str(home)) as (second, _log2):
            second_socket = run_dir / f"gunicorn-{second.rsplit(':', 1)[1]}.ctl"
            assert first_socket.is_socket() and second_socket.is_socket() and first_socket != second_socket
        assert not second_socket.exists()  # the second removed its own ...
        assert first_socket.is_socket()  # ... and not the first one's
        assert httpx.get(first + "/healthz", timeout=10).status_code == 200
        assert not (home / ".gunicorn").exists()  # the per-user default is not used
    assert not first_socket.exists()


def test_the_collector_has_a_control_socket_of_its_own(tmp_path, monkeypatch):
    """As the API's: in the run directory, named by the collector's port, not gunicorn's per-user path."""
    import runpy

    monkeypatch.delenv("SIGNALS_RUN_DIR", raising=False)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.setenv("SIGNALS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SIGNALS_COLLECTOR_PORT", "8123")
    config = runpy.run_path(str(ROOT / "service" / "collector" / "gunicorn_conf.py"))
    assert config["control_socket"] == str((tmp_path / "run" / "gunicorn-8123.ctl").absolute())
    assert config["control_socket_disable"] is False
