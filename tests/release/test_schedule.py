"""Running the schedule: `python -m service data release` and the lander's hourly release."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

from service.cli import lander
from service.release.storage import ReleaseStore
from service.settings import Settings
from tests.release.conftest import RELEASE_SECRET
from tests.support.fixture_data import FIXTURE_AS_OF

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_releases_the_store_then_nothing_more(released_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(released_dir, copy)
    env = {**os.environ, "SIGNALS_DATA_DIR": str(copy), "SIGNALS_SECRET": RELEASE_SECRET}
    done = subprocess.run([sys.executable, "-m", "service", "data", "release", "--no-progress"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # The store's last event is at 12:20 on the fixture's day: released through 13:00, not through today.
    assert "released " in done.stdout and "2026-03-10T13:00:00Z" in done.stdout
    assert ReleaseStore(copy).through() == FIXTURE_AS_OF + dt.timedelta(hours=1)
    again = subprocess.run([sys.executable, "-m", "service", "data", "release", "--no-progress"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "released 0 nodes" in again.stdout


def test_the_lander_releases_an_hour_once_its_delay_has_passed(released_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(released_dir, copy)
    settings = Settings(data_dir=copy, secret=RELEASE_SECRET, privacy_release=True,
                        privacy_release_delay_seconds=30)
    lander._ATTEMPTED.clear()
    hour_end = FIXTURE_AS_OF + dt.timedelta(hours=1)
    lander._release_closed_hours(settings, hour_end + dt.timedelta(seconds=10))  # within the delay
    assert ReleaseStore(copy).through() == FIXTURE_AS_OF
    lander._release_closed_hours(settings, hour_end + dt.timedelta(seconds=40))
    assert ReleaseStore(copy).through() == hour_end


def test_a_release_under_another_secret_is_not_extended_but_rebuilt(released_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(released_dir, copy)
    env = {**os.environ, "SIGNALS_DATA_DIR": str(copy), "SIGNALS_SECRET": "a new secret"}
    refused = subprocess.run([sys.executable, "-m", "service", "data", "release", "--no-progress"], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and "--rebuild" in refused.stderr
    assert ReleaseStore(copy).through() == FIXTURE_AS_OF  # nothing added
