"""A landing round killed at one of its stages, as `kill -9` would: `python -m
tests.support.crashing_lander DATA_DIR STAGE [NOW]` runs the lander's round on the Parquet store and ends
the process with os._exit (no cleanup, no finally) when the writer reaches STAGE ("staging",
"renaming", "snapshot", "publishing", "published"), or, with STAGE "removing", after the generation
is published and before the round removes its batches from the log."""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

from service.collector import lander
from service.collector import log as event_log
from service.collector.index import LandedIndex
from service.store.target import ParquetTarget

KILLED = 137


def main(data_dir: str, stage: str, now: str = "") -> None:
    directory = Path(data_dir)

    def on_stage(name: str, _done: int, _total: int) -> None:
        if name == stage:
            os._exit(KILLED)

    def removing(*_args, **_kwargs) -> None:
        os._exit(KILLED)

    if stage == "removing":
        event_log.remove = removing  # the round's last step
    target = ParquetTarget(directory)
    with target.lock():
        target.sweep()
        index = LandedIndex(directory).load()
    moment = dt.datetime.fromisoformat(now) if now else dt.datetime.now(dt.UTC)
    lander.land_once(directory, target, index, now=moment, on_stage=on_stage)
    sys.exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:])
