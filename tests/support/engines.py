"""Engine tests against both engines: `Engine(privacy, ...)` here builds the engine of the kind the
`engine_kind` fixture (tests/conftest.py) selected, and takes the same `EventFrames` either way.

For ClickHouse, each distinct `EventFrames` is landed once (memoised by identity) in a database of
its own in the session's chdb directory (chdb opens one directory per process), with the frames'
generation and data versions, so the privacy stage sees exactly what it sees from the polars engine.
"""

from __future__ import annotations

import uuid
import weakref
from pathlib import Path
from typing import Any

import polars as pl

from service.clickhouse import schema as ch_schema
from service.clickhouse.connection import ClickHouse
from service.clickhouse.store import ClickHouseSnapshot, load_snapshot
from service.engine.clickhouse import ClickHouseEngine
from service.engine.polars import PolarsEngine
from service.privacy import Privacy
from service.store import schema
from service.store.reader import EventFrames

KINDS = ("polars", "clickhouse")
current = {"kind": "polars", "chdb": None}  # set by the engine_kind fixture
_landed: weakref.WeakKeyDictionary[EventFrames, ClickHouseSnapshot] = weakref.WeakKeyDictionary()


def chdb_url(directory: Path) -> str:
    return f"chdb://{directory}"


def fresh_database(directory: Path, prefix: str = "t") -> ClickHouse:
    """A new, empty database with the service's tables in the session's chdb directory."""
    ch = ClickHouse(chdb_url(directory), database=f"{prefix}_{uuid.uuid4().hex[:12]}")
    ch_schema.initialise(ch)
    return ch


def land(frames: EventFrames, directory: Path) -> ClickHouseSnapshot:
    """The frames' rows in a database of their own, read back as the snapshot of their generation."""
    snapshot = _landed.get(frames)
    if snapshot is not None:
        return snapshot
    ch = fresh_database(directory)
    for table in schema.TABLES:
        frame = getattr(frames, table)
        if frame.height:
            rows = frame.select(pl.col(c).cast(t) for c, t in schema.SCHEMAS[table].items())
            ch.insert(table, rows.with_columns(pl.lit(frames.generation, dtype=pl.UInt32).alias("generation")))
    ch.insert(ch_schema.LANDINGS, pl.DataFrame(
        [{"generation": frames.generation, "published": 1, "landed_at": "", "sources": "[]", "other_files": []}],
        schema={"generation": pl.UInt32, "published": pl.UInt8, "landed_at": pl.String, "sources": pl.String,
                "other_files": pl.List(pl.String)}))
    loaded = load_snapshot(ch, frames.generation)
    # The frames' own data versions (a fixture has none): the noise is keyed on them.
    snapshot = _landed[frames] = ClickHouseSnapshot(ch, loaded.generation, loaded.last_event,
                                                    {t: dict(frames.versions.get(t, {})) for t in schema.TABLES},
                                                    loaded.rows, loaded.first_event)
    return snapshot


class _OnLandedFrames:
    """A ClickHouseEngine that takes EventFrames (landing them first)."""

    def __init__(self, engine: ClickHouseEngine, directory: Path) -> None:
        self._engine = engine
        self._directory = directory
        self.privacy = engine.privacy

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._engine, name)

        def call(frames: EventFrames, *args: Any, **kwargs: Any) -> Any:
            return method(land(frames, self._directory), *args, **kwargs)

        return call


def Engine(privacy: Privacy, **kwargs: Any) -> Any:  # noqa: N802 (stands in for the class)
    """The engine under test, of the selected kind."""
    if current["kind"] == "clickhouse":
        return _OnLandedFrames(ClickHouseEngine(privacy, **kwargs), current["chdb"])
    return PolarsEngine(privacy, **kwargs)
