"""kill -9 in the middle of a release: the next run completes it, and the release is the one an
uninterrupted run makes (every node written whole, none written twice, the same noise)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from service.release.menu import TABLES
from service.release.storage import ReleaseStore
from tests.release.conftest import RELEASE_SECRET
from tests.support.fixture_data import FIXTURE_AS_OF

ROOT = Path(__file__).resolve().parents[2]


def _release(data: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "SIGNALS_DATA_DIR": str(data), "SIGNALS_SECRET": RELEASE_SECRET}
    return subprocess.Popen([sys.executable, "-m", "service", "data", "release", "--no-progress"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_killed_release_is_completed_by_the_next_run(fixture_data_dir: Path, released_dir: Path,
                                                      tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    rng = random.Random(int(os.environ.get("SIGNALS_TEST_SEED", "11")))
    for _ in range(2):
        running = _release(data)
        time.sleep(rng.uniform(3.0, 12.0))
        if running.poll() is None:
            running.send_signal(signal.SIGKILL)
        running.communicate(timeout=60)  # reaps it and closes its pipes
    done = _release(data)
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err
    for table in TABLES:
        mine = ReleaseStore(data).read_table(table).filter(pl.col("start") < FIXTURE_AS_OF.replace(hour=0))
        clean = ReleaseStore(released_dir).read_table(table).filter(pl.col("start") < FIXTURE_AS_OF.replace(hour=0))
        assert mine.equals(clean), table.name
    assert not list((data / "release").rglob(".*.parquet"))  # no temporary file left behind
