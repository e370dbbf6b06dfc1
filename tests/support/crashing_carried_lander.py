"""A landing round over the RabbitMQ carrier killed at one of its stages, as `kill -9` would:
`python -m tests.support.crashing_carried_lander DATA_DIR AMQP_URL QUEUE STAGE` takes what the queue
delivers (service/collector/carrier.py `Consumer`), lands it on the Parquet store and ends the
process with os._exit (no cleanup, no acknowledgement, no connection closed) when the writer
reaches STAGE ("staging", "renaming", "snapshot", "publishing", "published"), or, with STAGE
"acking", after the generation is published and before the round acknowledges its messages."""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
from pathlib import Path

from service.collector import carrier, lander
from service.collector.index import LandedIndex
from service.store.target import ParquetTarget

KILLED = 137


def main(data_dir: str, url: str, queue: str, stage: str) -> None:
    directory = Path(data_dir)

    def on_stage(name: str, _done: int, _total: int) -> None:
        if name == stage:
            os._exit(KILLED)

    consumer = carrier.Consumer(url, queue, directory)
    consumer.wait(0.5, threading.Event())
    delivered = consumer.take()
    if not delivered:
        sys.exit(3)  # nothing arrived: the test would prove nothing
    target = ParquetTarget(directory)
    with target.lock():
        target.sweep()
        index = LandedIndex(directory).load()
    lander.land_once(directory, target, index, now=dt.datetime.now(dt.UTC), on_stage=on_stage, carried=delivered)
    if stage == "acking":
        os._exit(KILLED)
    consumer.ack(delivered)
    sys.exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:])
