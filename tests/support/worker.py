"""The Procfile's processes without a port: the worker (`python -m service worker`: webhook
evaluations and deliveries), for tests that need deliveries made outside the web process, and
the precompute process."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import ROOT, procfile_command, service_env


@contextlib.contextmanager
def worker_process(data_dir: Path, **env: str) -> Iterator[list[str]]:
    """The worker on `data_dir` (the same accounts database as the API's); yields a list that
    receives its output once it has stopped. It has no port to ask: it counts as started when it
    is still running after its first ticks."""
    with procfile_process("worker", data_dir, **env) as log:
        yield log


@contextlib.contextmanager
def procfile_process(name: str, data_dir: Path, **env: str) -> Iterator[list[str]]:
    """A Procfile process without a port (`worker`, `precompute`) on `data_dir`; yields a list that
    receives its output once it has stopped. Started means still running after 3 seconds."""
    log: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as output:
        process = subprocess.Popen(procfile_command(name), cwd=ROOT, env=service_env(data_dir, **env),
                                   stdout=output, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(3)
            if process.poll() is not None:
                output.seek(0)
                raise AssertionError(f"the {name} process exited: {output.read()}")
            yield log
        finally:
            process.terminate()
            process.wait(timeout=30)
            output.seek(0)
            log.append(output.read())
