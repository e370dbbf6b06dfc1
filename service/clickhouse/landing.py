"""Landing validated rows in ClickHouse: one generation at a time, all or nothing for readers.

The same steps as the Parquet store (service/store/writer.py), on tables instead of files:

1. a pending row in `landings` records generation N (one more than any generation ever begun), the
   source files' SHA-256 hashes and the quarantine files it will put in place;
2. the rows are inserted with `generation = N`, the quarantine files written (by rename);
3. publishing: a second `landings` row marks N published.

Readers take rows of generations up to the last published one (service/clickhouse/store.py), so
nothing of N is visible before step 3 and all of it after. An exception on the way deletes what
this call wrote; a killed writer leaves it behind, and `sweep` (run by the next writer, under the
writer lock) deletes the rows and quarantine files of every generation begun but never published.
A file whose hash a published generation recorded is already in (`landed_sources`): running an
ingest again after a crash lands each row once.

One writer at a time: the writer lock is the data directory's (writer_lock.lock), as for Parquet. With
chdb the database directory is moreover open in one process at a time (connection.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import cast

import polars as pl

from service.clickhouse import schema as ch_schema
from service.clickhouse.connection import ClickHouse
from service.store import leftovers, manifests, schema, writer, writer_lock

log = logging.getLogger(__name__)

LANDINGS = ch_schema.LANDINGS
_MUTATION = {"mutations_sync": 2}  # a DELETE returns once the rows are gone (on every replica)


class ClickHouseTarget:
    """The ClickHouse tables as the place where ingest and the demo land rows."""

    def __init__(self, ch: ClickHouse, data_dir: Path) -> None:
        self.ch = ch
        self.data_dir = Path(data_dir)

    def lock(self, *, on_wait: Callable[[], None] | None = None) -> contextlib.AbstractContextManager[None]:
        return writer_lock.lock(self.data_dir, on_wait=on_wait)

    def read_generation(self) -> int:
        return published_generation(self.ch)

    def has_event_data(self) -> bool:
        return any(self.ch.frame(f"SELECT count() AS n FROM {table}").item() for table in schema.TABLES)

    def landed_sources(self) -> dict[str, manifests.LandedSource]:
        rows = self.ch.frame(f"SELECT generation, landed_at, sources FROM {LANDINGS} WHERE published = 1 "
                             "ORDER BY generation")
        found: dict[str, manifests.LandedSource] = {}
        for generation, landed_at, sources in rows.iter_rows():
            for source in json.loads(sources):
                found[source["sha256"]] = manifests.LandedSource(source["sha256"], source["file"], generation, landed_at)
        return found

    def sweep(self) -> leftovers.Swept:
        """Delete what generations begun but never published left behind (Swept.partitions: rows)."""
        pending = self.ch.frame(
            f"SELECT generation, other_files FROM {LANDINGS} GROUP BY generation, other_files "
            "HAVING max(published) = 0 ORDER BY generation")
        if pending.is_empty():
            return leftovers.Swept(None)
        partitions = other = 0
        for generation, files in pending.iter_rows():
            partitions += self._delete_rows(generation)
            for relative in files:
                path = self.data_dir / relative
                if path.exists():
                    path.unlink()
                    other += 1
            self.ch.command(f"DELETE FROM {LANDINGS} WHERE generation = {int(generation)}", settings=_MUTATION)
        swept = leftovers.Swept(cast(int, pending.get_column("generation").max()), partitions=partitions, other_files=other,
                             manifests=pending.height)
        log.warning("removed the leftovers of an unfinished ingest in ClickHouse %s: generation %d (never "
                    "published): %d rows, %d quarantine files", self.ch.describe(), swept.generation, partitions,
                    other)
        return swept

    def _delete_rows(self, generation: int) -> int:
        """Delete a generation's rows from both tables; returns how many there were."""
        count = 0
        for table in schema.TABLES:
            n = int(self.ch.frame(f"SELECT count() AS n FROM {table} WHERE generation = {int(generation)}").item())
            if n:
                self.ch.command(f"ALTER TABLE {table} DELETE WHERE generation = {int(generation)}", settings=_MUTATION)
            count += n
        return count

    def write_tables(self, frames: Mapping[str, pl.DataFrame], *, on_file: Callable[[], None] | None = None,
                     on_stage: writer.StageCallback | None = None, sources: Sequence[manifests.SourceRecord] = (),
                     other_files: Mapping[Path, bytes] | None = None,
                     now: dt.datetime | None = None, dedup_token: str | None = None) -> writer.WriteResult:
        """Land rows of one or both tables (stored schema) as one generation; see the module docstring.

        `dedup_token` (the lander's: its round's batches) makes each table's insert carry
        `insert_deduplication_token` = token, generation and table, so that an insert sent twice
        within this landing (a retry after a lost answer from a server) is stored once. The
        generation is part of it: after a landing cut short and swept, the same batches land again
        in a new generation, which must not be taken for the deleted one's repeat."""
        for table, frame in frames.items():
            if table not in schema.SCHEMAS:
                raise ValueError(f"unknown table {table!r}")
            writer.check_schema(table, frame)
        extras = {Path(path): content for path, content in (other_files or {}).items()}
        stage = on_stage or (lambda _stage, _done, _total: None)
        with self.lock():
            self.sweep()
            if not any(frame.height for frame in frames.values()):
                _write_files(self.data_dir, extras)
                return writer.WriteResult((), None)
            begun = self.ch.frame(f"SELECT max(generation) AS g FROM {LANDINGS}").item()
            generation = int(begun or 0) + 1
            landing = {
                "generation": generation,
                "landed_at": (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "sources": json.dumps([dataclasses.asdict(source) for source in sources]),
                "other_files": [_relative(self.data_dir, path) for path in extras],
            }
            self._landing_row(landing, published=0)
            tables = [(table, frame) for table, frame in frames.items() if frame.height]
            placed: list[Path] = []
            try:
                for index, (table, frame) in enumerate(tables):
                    stage("staging", index, len(tables) + len(extras))
                    self.ch.insert(table, frame.with_columns(pl.lit(generation, dtype=pl.UInt32).alias("generation")),
                                   settings={"insert_deduplication_token": f"{dedup_token}:g{generation}:{table}"}
                                   if dedup_token else None)
                    if on_file is not None:
                        on_file()
                placed = _write_files(self.data_dir, extras)
                stage("publishing", 0, 1)
                self._landing_row(landing, published=1)
            except BaseException:
                # Not published, so not landed: remove what this call wrote (a killed process leaves it
                # to the next sweep instead).
                with contextlib.suppress(Exception):
                    for path in placed:
                        path.unlink(missing_ok=True)
                    self._delete_rows(generation)
                    self.ch.command(f"DELETE FROM {LANDINGS} WHERE generation = {generation}", settings=_MUTATION)
                raise
            stage("published", 1, 1)
        return writer.WriteResult((), generation)

    def _landing_row(self, landing: dict, published: int) -> None:
        row = pl.DataFrame([{**landing, "published": published}],
                           schema={"generation": pl.UInt32, "published": pl.UInt8, "landed_at": pl.String,
                                   "sources": pl.String, "other_files": pl.List(pl.String)})
        self.ch.insert(LANDINGS, row)

    @contextlib.contextmanager
    def replacing(self) -> Iterator[None]:
        """`data demo --replace`: the old rows are deleted once the new generation has landed.

        Rows of generations up to the current one are the old data; they go after the demo's rows
        are in (if landing fails, they stay)."""
        old = published_generation(self.ch)
        yield
        for table in schema.TABLES:
            self.ch.command(f"ALTER TABLE {table} DELETE WHERE generation <= {old}", settings=_MUTATION)


def published_generation(ch: ClickHouse) -> int:
    """The last published generation; 0 when nothing landed."""
    value = ch.frame(f"SELECT max(generation) AS g FROM {LANDINGS} WHERE published = 1").item()
    return int(value or 0)


def _relative(data_dir: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(data_dir.resolve()).as_posix()
    except ValueError:
        raise ValueError(f"{path} is not inside the data directory {data_dir}") from None


def _write_files(data_dir: Path, files: Mapping[Path, bytes]) -> list[Path]:
    """Each file written completely to a temporary name beside it, then renamed into place."""
    placed: list[Path] = []
    try:
        for final, content in files.items():
            _relative(data_dir, final)
            final.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(content)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, final)
            finally:
                Path(tmp).unlink(missing_ok=True)
            placed.append(final)
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        raise
    return placed
