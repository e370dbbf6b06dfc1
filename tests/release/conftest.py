"""Fixtures of the release tests: the fixture event store copied and released under a test secret."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from service.release.builder import release_through
from service.release.noise import release_key
from service.release.sources import FrameDays
from service.release.storage import ReleaseStore
from service.store.reader import EventFrames, EventStore
from tests.support.fixture_data import FIXTURE_AS_OF

RELEASE_SECRET = "release-tests-secret"


class LastDays(FrameDays):
    """The store's last `days` days only: a release of a few days, where a test needs no more."""

    def __init__(self, frames: EventFrames, days: int) -> None:
        super().__init__(frames)
        self.days = days

    def first_day(self) -> dt.date | None:
        return FIXTURE_AS_OF.date() - dt.timedelta(days=self.days)


def released_copy(source: Path, target: Path, secret: str = RELEASE_SECRET, days: int | None = None) -> Path:
    shutil.copytree(source, target)
    frames = EventStore(target).snapshot()
    events = FrameDays(frames) if days is None else LastDays(frames, days)
    release_through(ReleaseStore(target), events, release_key(secret), FIXTURE_AS_OF)
    return target


@pytest.fixture(scope="session")
def released_dir(fixture_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture store with its release through FIXTURE_AS_OF (read-only: copy it to change it)."""
    return released_copy(fixture_data_dir, tmp_path_factory.mktemp("released") / "data")


DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)


@pytest.fixture(scope="session")
def released_demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300,000 demo events over 4 days ending at DEMO_END, released: cells of hundreds of users."""
    from service.demo.generate import generate_demo

    target = tmp_path_factory.mktemp("released-demo") / "data"
    generate_demo(target, events=300_000, days=4, seed=3, end=DEMO_END, secret=RELEASE_SECRET, progress=False)
    frames = EventStore(target).snapshot()
    release_through(ReleaseStore(target), FrameDays(frames), release_key(RELEASE_SECRET), DEMO_END)
    return target
