"""The real processes for tests: the admin command line in a subprocess, and the Procfile's web
process (gunicorn) started on a free port."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.redis_server import free_port
from tests.support.secret import TEST_SECRET

ROOT = Path(__file__).resolve().parent.parent.parent


def service_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "REDIS_URL", "WEB_CONCURRENCY"))}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    # Metrics are not served unless a test asks (SIGNALS_METRICS_PORT): servers of parallel tests
    # must not compete for one port.
    env.update({"SIGNALS_DATA_DIR": str(data_dir), "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
                "SIGNALS_METRICS_PORT": "0", "SIGNALS_SECRET": TEST_SECRET, **extra})
    return env


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service", *args], cwd=ROOT, env=service_env(data_dir),
                          capture_output=True, text=True, timeout=120)


def create_key(data_dir: Path, tier: str) -> str:
    """A new key of the tier (the command line prints it on its last line)."""
    return cli(data_dir, "keys", "create", "--tier", tier).stdout.strip().splitlines()[-1]


def procfile_command(name: str) -> list[str]:
    """The Procfile's line for a process, as honcho runs it (through a shell)."""
    procfile = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if ":" in line)
    return ["bash", "-c", "exec " + procfile[name].strip()]


@contextlib.contextmanager
def serving(command: list[str], env: dict[str, str], ready_url: str, what: str):
    """A server process started and waited for until `ready_url` answers 200; yields a list that
    receives its output once it has stopped. The output goes to a file, not a pipe: a pipe that
    nobody reads fills after a few hundred access-log lines and blocks the server's workers."""
    with serving_process(command, env, ready_url, what) as (log, _process):
        yield log


@contextlib.contextmanager
def serving_process(command: list[str], env: dict[str, str], ready_url: str, what: str):
    """`serving`, yielding the output list and the server's `Popen` (for its pid)."""
    log: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as output:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)

        def written() -> str:
            output.seek(0)
            return output.read()

        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(ready_url, timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.poll() is None, written()
                assert time.monotonic() < deadline, f"{what} did not become ready"
                time.sleep(0.2)
            yield log, process
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.append(written())


@contextlib.contextmanager
def gunicorn(data_dir: Path, **env: str):
    """The Procfile's web command, really started; yields its base URL and a list that receives
    the server's output once it has stopped."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serving(procfile_command("web"), service_env(data_dir, PORT=str(port), **env), base + "/readyz",
                 "gunicorn") as log:
        yield base, log


@contextlib.contextmanager
def gunicorn_process(data_dir: Path, **env: str):
    """`gunicorn`, yielding its base URL, the output list and the master's pid."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serving_process(procfile_command("web"), service_env(data_dir, PORT=str(port), **env), base + "/readyz",
                         "gunicorn") as (log, process):
        yield base, log, process.pid
