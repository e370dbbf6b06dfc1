"""Where validated rows land: the hand-off point between ingest (and the demo generator,
service/demo/) and a store.

Ingest reads, validates and quarantines the same way whatever the store (service/store/ingest.py);
what differs is only where a generation lands, how a landing cut short is swept, and how "is this
file already in?" is answered. `LandingTarget` is that seam: `ParquetTarget` is the Parquet store
in the data directory (service/store/writer.py), `ClickHouseTarget` (service/clickhouse/landing.py)
the ClickHouse tables. Quarantine files always land in the data directory, with the generation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import polars as pl

from service.store import layout, leftovers, manifests, replacement, schema, writer, writer_lock


class LandingTarget(Protocol):
    data_dir: Path  # quarantine files land here, whatever the target

    def lock(self, *, on_wait: Callable[[], None] | None = None) -> contextlib.AbstractContextManager[None]: ...

    def sweep(self) -> leftovers.Swept: ...

    def landed_sources(self) -> dict[str, manifests.LandedSource]: ...

    def write_tables(self, frames: Mapping[str, pl.DataFrame], *, on_file: Callable[[], None] | None = None,
                     on_stage: writer.StageCallback | None = None, sources: Sequence[manifests.SourceRecord] = (),
                     other_files: Mapping[Path, bytes] | None = None, now=None,
                     dedup_token: str | None = None) -> writer.WriteResult: ...

    def read_generation(self) -> int: ...

    def has_event_data(self) -> bool: ...

    def replacing(self) -> contextlib.AbstractContextManager[None]: ...


class ParquetTarget:
    """The Parquet store in `data_dir` (the polars engine's)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)

    def lock(self, *, on_wait: Callable[[], None] | None = None) -> contextlib.AbstractContextManager[None]:
        return writer_lock.lock(self.data_dir, on_wait=on_wait)

    def sweep(self) -> leftovers.Swept:
        return leftovers.sweep(self.data_dir)

    def landed_sources(self) -> dict[str, manifests.LandedSource]:
        return manifests.landed_sources(self.data_dir)

    def write_tables(self, frames: Mapping[str, pl.DataFrame], *, dedup_token: str | None = None,
                     **kwargs) -> writer.WriteResult:
        """`dedup_token` is ClickHouse's (its inserts); a Parquet generation is written once by one
        writer, under its lock, and has no repeated inserts to drop."""
        return writer.write_tables(self.data_dir, frames, **kwargs)

    def read_generation(self) -> int:
        return layout.read_generation(self.data_dir)

    def has_event_data(self) -> bool:
        return any(any(layout.table_dir(self.data_dir, table).glob("date=*/*.parquet")) for table in schema.TABLES)

    def replacing(self) -> contextlib.AbstractContextManager[None]:
        return replacement.replacing(self.data_dir)
