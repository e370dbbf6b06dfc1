"""The Procfile's dashboard process serves its first requests side by side: Dash's one-time
set-up happens as each worker loads the app (dashboard/wsgi.py), not inside the first request,
where a second request arriving meanwhile got a 500 and left the page on "Loading..." for good."""

from __future__ import annotations

import concurrent.futures
import re
import socket
import subprocess
import time

import httpx
import pytest

from tests.support.processes import ROOT, procfile_command, service_env
from tests.support.redis_server import free_port

pytestmark = pytest.mark.process


def _start(tmp_path, port: int) -> subprocess.Popen:
    return subprocess.Popen(procfile_command("dashboard"), cwd=ROOT,
                            env=service_env(tmp_path, SIGNALS_API_URL=f"http://127.0.0.1:{free_port()}",
                                            SIGNALS_DASHBOARD_PORT=str(port)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _listening(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "the dashboard exited"
        assert time.monotonic() < deadline, "the dashboard did not start"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)


def test_a_fresh_dashboard_answers_its_first_requests_together(tmp_path):
    # The scripts a page asks for, as a first process names them.
    port = free_port()
    process = _start(tmp_path, port)
    try:
        _listening(port, process)
        page = httpx.get(f"http://127.0.0.1:{port}/sign-in", timeout=30).text
    finally:
        process.terminate()
        process.wait(timeout=30)
    scripts = re.findall(r'src="(/_dash-component-suites/[^"]+)"', page)
    assert len(scripts) > 5
    paths = ["/_dash-dependencies", "/_dash-layout", "/sign-in", *scripts] * 2
    for _round in range(8):  # every round a new process whose workers have served nothing yet
        port = free_port()
        process = _start(tmp_path, port)
        try:
            _listening(port, process)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http, \
                    concurrent.futures.ThreadPoolExecutor(len(paths)) as pool:
                statuses = list(pool.map(lambda path: (path, http.get(path).status_code), paths))
        finally:
            process.terminate()
            process.wait(timeout=30)
        assert [s for s in statuses if s[1] != 200] == []
