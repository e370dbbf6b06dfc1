"""What a process reading events from ClickHouse holds: the published generation, not the rows.

`ClickHouseStore.snapshot()` plays `EventStore.snapshot()`'s part (service/store/reader.py): a
`ClickHouseSnapshot` names the generation every query of a request reads (rows with `generation <=`
it), the last event's time (for `as_of`), and each date's data version (the privacy noise is keyed
on it), and it is what caches key on. The rows stay in ClickHouse. The generation is re-read at most
once per `check_interval`, as the Parquet store re-reads its GENERATION file.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping
from datetime import date, datetime
from typing import cast

from service.clickhouse import schema as ch_schema
from service.clickhouse.connection import ClickHouse
from service.clickhouse.landing import published_generation
from service.store import schema

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, eq=False)
class ClickHouseSnapshot:
    """One consistent view of both event tables in ClickHouse (compared and hashed by identity)."""

    ch: ClickHouse
    generation: int                 # rows of generations up to this one
    last_event: datetime | None     # max ts over both tables; None when both are empty
    # Per table: UTC date -> the last generation that landed rows for it (as EventFrames.versions).
    versions: Mapping[str, Mapping[date, int]] = dataclasses.field(default_factory=dict)
    rows: Mapping[str, int] = dataclasses.field(default_factory=dict)  # per table (logs)
    first_event: datetime | None = None  # min ts over both tables (as EventFrames.first_event)


def load_snapshot(ch: ClickHouse, generation: int) -> ClickHouseSnapshot:
    versions: dict[str, dict[date, int]] = {}
    rows: dict[str, int] = {}
    ends: list[datetime] = []  # a DateTime column's max and min: datetimes (the stubs say any value)
    starts: list[datetime] = []
    for table in schema.TABLES:
        days = ch.frame(
            f"SELECT toDate(ts) AS day, max(generation) AS version, count() AS n, min(ts) AS first, max(ts) AS last "
            f"FROM {table} WHERE generation <= {{g:UInt32}} GROUP BY day", {"g": generation})
        versions[table] = dict(zip(days.get_column("day").to_list(), days.get_column("version").to_list(), strict=True))
        rows[table] = int(days.get_column("n").sum())
        if days.height:
            ends.append(cast(datetime, days.get_column("last").max()))
            starts.append(cast(datetime, days.get_column("first").min()))
    return ClickHouseSnapshot(ch, generation, max(ends) if ends else None, versions, rows,
                              min(starts) if starts else None)


class ClickHouseStore:
    """Lazily opened, generation-following holder of the current `ClickHouseSnapshot`."""

    def __init__(self, ch: ClickHouse, *, check_interval: float = 1.0) -> None:
        self.ch = ch
        self._check_interval = check_interval
        self._lock = threading.Lock()
        self._snapshot: ClickHouseSnapshot | None = None
        self._next_check = 0.0

    @property
    def loaded(self) -> bool:
        return self._snapshot is not None

    def snapshot(self) -> ClickHouseSnapshot:
        current = self._snapshot
        if current is not None and time.monotonic() < self._next_check:
            return current
        with self._lock:
            current = self._snapshot
            if current is None:
                ch_schema.require(self.ch)
            if current is None or time.monotonic() >= self._next_check:
                try:
                    generation = published_generation(self.ch)
                    if current is None or generation != current.generation:
                        current = load_snapshot(self.ch, generation)
                        log.info("ClickHouse %s: generation %d, %s", self.ch.describe(), generation,
                                 ", ".join(f"{n:,} {table}" for table, n in current.rows.items()))
                except Exception:
                    if current is None:
                        raise
                    log.exception("ClickHouse generation check failed; serving generation %d", current.generation)
                self._snapshot = current
                self._next_check = time.monotonic() + self._check_interval
            return current
