"""The data set `scripts/run.sh` makes (1,000,000 events over 90 days, seed 7; the tests' secret),
ending at a fixed hour: what a new user sees first (the root conftest's `default_demo_dir`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.support.secret import TEST_SECRET

DEFAULT_DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)


def write_default_demo(data_dir: Path) -> None:
    from service.demo.generate import generate_demo

    generate_demo(data_dir, events=1_000_000, days=90, seed=7, end=DEFAULT_DEMO_END, secret=TEST_SECRET,
                  progress=False)
