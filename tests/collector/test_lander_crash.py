"""The lander killed (os._exit, as kill -9: no cleanup) at each stage of a landing round, in a
process of its own (tests/support/crashing_lander.py): the next round lands every event once."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from service.collector import log as event_log
from service.store import layout
from tests.support.collector_events import HOUR, NOW, append, at_hour_start, land, land_at, many, stored_ids
from tests.support.crashing_lander import KILLED
from tests.support.processes import ROOT


@pytest.mark.parametrize("stage", ["staging", "renaming", "snapshot", "publishing", "published", "removing"])
def test_a_lander_killed_at_any_stage_lands_every_event_once_on_the_next_round(data_dir, stage):
    append(data_dir, many(40))
    append(data_dir, many(40, start=20))  # 20 of them repeat the first batch's
    killed = subprocess.run([sys.executable, "-m", "tests.support.crashing_lander", str(data_dir), stage],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert killed.returncode == KILLED, killed.stderr
    published = layout.read_generation(data_dir)
    assert published in (0, 1)
    assert stored_ids(data_dir)["suppressions"] == (60 if published else 0)  # all of the round or none
    again = land(data_dir)
    assert stored_ids(data_dir)["suppressions"] == 60
    assert again.landed == (0 if published else 60)
    assert event_log.batches(data_dir) == []
    assert land(data_dir).landed == 0
    append(data_dir, many(60))  # everything again: all duplicates
    assert land(data_dir).duplicates == 60 and stored_ids(data_dir)["suppressions"] == 60


@pytest.mark.parametrize("stage", ["staging", "publishing", "published", "removing"])
def test_killed_while_holding_the_running_hour_each_event_still_lands_once_after_it_ends(data_dir, stage):
    append(data_dir, [*at_hour_start(30, "run"), *many(20, prefix="past")])
    killed = subprocess.run([sys.executable, "-m", "tests.support.crashing_lander", str(data_dir), stage,
                             NOW.isoformat()], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert killed.returncode == KILLED, killed.stderr
    again = land_at(data_dir, NOW)
    assert stored_ids(data_dir)["suppressions"] == 20
    assert sum(item.events for item in event_log.held(data_dir)) == 30
    assert again.landed in (0, 20)
    land_at(data_dir, HOUR + dt.timedelta(hours=1, seconds=1))
    assert stored_ids(data_dir)["suppressions"] == 50
    assert event_log.held(data_dir) == [] and event_log.batches(data_dir) == []
