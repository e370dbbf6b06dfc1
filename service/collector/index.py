"""What has landed from the collector's log: the ids of landed events and the names of landed batches.

The index is a set of Parquet files in `<data>/events/index/`, one per landing, each holding the
`event_id` and `ts` of the events that landing stored, and (in the file's metadata) the names of
the log's batches it consumed. A landing's index file is one of the generation's own files
(`other_files` of `writer.write_tables` / `ClickHouseTarget.write_tables`): it is in place exactly
when the generation is published, and a landing cut short leaves neither the rows nor the index
file (the next writer's sweep removes both). So after any crash the index says exactly which
batches and which events are in the store, and landing again is idempotent:

- a batch (or held file) whose name is in the index has landed (its file is removed, nothing is
  stored again);
- an event whose id is in the index is a duplicate (counted, dropped), whichever batch brought it.

Ids are kept while their event could still be accepted: an event older than SIGNALS_LATE_HOURS is
refused by the collector, so an id whose `ts` is older than that (and an hour more, for clock
skew) can never come back, and `compact` drops it. `compact` merges the files into one, written
completely under a temporary name and renamed; the old files are removed after. A kill between
the two leaves the union of the same ids and names: still the same index.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from service.collector import log as event_log
from service.store import schema

log = logging.getLogger(__name__)

_META = b"signals.batches"
COMPACT_FROM = 32  # index files from which a round merges them
_ID_SCHEMA: dict[str, pl.DataType] = {"event_id": pl.String(), "ts": schema.TS}
_ID_COLUMNS = pl.Schema(_ID_SCHEMA)


def index_dir(data_dir: Path) -> Path:
    return event_log.events_dir(data_dir) / "index"


def segment_bytes(ids: pl.DataFrame, batches: Iterable[str]) -> bytes:
    """An index file's content: the events' ids and times, the batches' names in the metadata."""
    table = ids.select(list(_ID_SCHEMA)).to_arrow()
    table = table.replace_schema_metadata({_META: json.dumps(sorted(batches)).encode("utf-8")})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def new_segment_path(data_dir: Path) -> Path:
    return index_dir(data_dir) / f"i{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"


class LandedIndex:
    """The index, read once and then kept up to date by the one lander that writes it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.ids = pl.DataFrame(schema=_ID_SCHEMA)
        self.batches: set[str] = set()
        self.files: list[Path] = []

    def load(self) -> LandedIndex:
        parts: list[pl.DataFrame] = []
        names: set[str] = set()
        files: list[Path] = []
        directory = index_dir(self.data_dir)
        for path in sorted(directory.glob("i*.parquet")) if directory.is_dir() else []:
            table = pq.read_table(path)
            meta = (table.schema.metadata or {}).get(_META)
            names.update(json.loads(meta) if meta else [])
            parts.append(pl.DataFrame(pl.from_arrow(table)).cast(_ID_COLUMNS))
            files.append(path)
        self.ids = pl.concat(parts) if parts else pl.DataFrame(schema=_ID_SCHEMA)
        self.batches, self.files = names, files
        return self

    def known(self, event_ids: pl.Series) -> pl.Series:
        """Whether each id has landed already."""
        return event_ids.is_in(self.ids.get_column("event_id"))

    def add(self, path: Path, ids: pl.DataFrame, batches: Iterable[str]) -> None:
        self.ids = pl.concat([self.ids, ids.select(list(_ID_SCHEMA)).cast(_ID_COLUMNS)])
        self.batches.update(batches)
        self.files.append(path)

    def forget_batches(self, names: Iterable[str]) -> None:
        """Names of batches whose files are gone need not be remembered (kept in the files until the
        next compaction, which keeps only names still in the log)."""
        self.batches.difference_update(names)

    def compact(self, now: dt.datetime, late_hours: int) -> bool:
        """Merge the index files into one, without ids too old to come back; True when it did."""
        if len(self.files) < COMPACT_FROM:
            return False
        oldest = now.astimezone(dt.UTC) - dt.timedelta(hours=late_hours + 1)
        kept = self.ids.filter(pl.col("ts") >= pl.lit(oldest).cast(schema.TS))
        # Batch names matter only while their file may still be in the log (removed after landing).
        in_log = {batch.name for batch in event_log.batches(self.data_dir)}
        in_log |= {item.name for item in event_log.held(self.data_dir)}
        names = self.batches & in_log
        path = new_segment_path(self.data_dir)
        temporary = path.with_name(f".tmp-{path.name}")
        with open(temporary, "wb") as handle:
            handle.write(segment_bytes(kept, names))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        event_log.fsync_dir(path.parent)
        for old in self.files:
            old.unlink(missing_ok=True)
        event_log.fsync_dir(path.parent)
        log.info("index compacted: %d files into one, %d ids kept (%d older than %d hours dropped)",
                 len(self.files), kept.height, self.ids.height - kept.height, late_hours + 1)
        self.ids, self.batches, self.files = kept, names, [path]
        return True
