"""Where the release lives: a durable table per menu table, written once per node, read by every
answer.

Layout under the data directory (both engines keep their release here: it is small, and the
ClickHouse engine's events stay in ClickHouse):

    release/<table>/<YYYY-MM-DD>.parquet   the nodes that start on that UTC day (hours, quarters,
                                           the day; a week's node in its Monday's file): level,
                                           start, cell, one Int64 per measure (the noisy value),
                                           one Float64 `sigma_<measure>` per measure (its noise s.d.)
    release/scalars/<YYYY-MM-DD>.parquet   the repeat factors' scalars of blocks ending that day
    release/STATE.json                     after every run: its generation (readers reload on a
                                           change), the hour released through, the key's name
    release/log.ndjson                     one line per release run, for operators

A file is replaced whole by a temporary file renamed over it, holding every row it held before
verbatim plus the new nodes: a released value is never changed, and a kill -9 leaves either the
old file or the new one. The noise s.d. of every node is in the file beside its values, so the
accountant recomputes the bound from the release itself (`accountant.from_release`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import polars as pl

from service.release.menu import TABLES, Table

SCALARS = "scalars"
STATE = "STATE.json"
LEVEL, START, CELL = "level", "start", "cell"
START_TYPE = pl.Datetime("us", "UTC")


def node_schema(table: Table) -> dict[str, pl.DataType]:
    columns: dict[str, pl.DataType] = {LEVEL: pl.String(), START: START_TYPE, CELL: pl.String()}
    columns.update({m: pl.Int64() for m in table.measure_names})
    columns.update({f"sigma_{m}": pl.Float64() for m in table.measure_names})
    return columns


SCALAR_SCHEMA: dict[str, pl.DataType] = {
    "table": pl.String(), "measure": pl.String(), "days": pl.Int32(), START: START_TYPE,
    "numerator": pl.Int64(), "denominator": pl.Int64(), "sigma": pl.Float64(), "sensitivity": pl.Float64(),
}


class ReleaseStore:
    """The release of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / "release"
        self._lock = threading.Lock()

    # --- reading -------------------------------------------------------------------------------

    def day_file(self, name: str, day: dt.date) -> Path:
        return self.root / name / f"{day.isoformat()}.parquet"

    def days(self, name: str) -> list[dt.date]:
        folder = self.root / name
        if not folder.is_dir():
            return []
        return sorted(dt.date.fromisoformat(p.stem) for p in folder.glob("*.parquet") if not p.name.startswith("."))

    def read_day(self, table: Table, day: dt.date) -> pl.DataFrame:
        path = self.day_file(table.name, day)
        if not path.exists():
            return pl.DataFrame(schema=node_schema(table))
        return pl.read_parquet(path)

    def read_table(self, table: Table) -> pl.DataFrame:
        """Every released node of the table, sorted by (level, start, cell)."""
        paths = [self.day_file(table.name, day) for day in self.days(table.name)]
        if not paths:
            return pl.DataFrame(schema=node_schema(table))
        return pl.read_parquet(paths).sort(LEVEL, START, CELL)

    def read_scalars(self) -> pl.DataFrame:
        paths = [self.day_file(SCALARS, day) for day in self.days(SCALARS)]
        if not paths:
            return pl.DataFrame(schema=SCALAR_SCHEMA)
        return pl.read_parquet(paths)

    def read_day_scalars(self, day: dt.date) -> pl.DataFrame:
        path = self.day_file(SCALARS, day)
        return pl.read_parquet(path) if path.exists() else pl.DataFrame(schema=SCALAR_SCHEMA)

    def released_nodes(self, table: Table, day: dt.date) -> set[tuple[str, dt.datetime]]:
        frame = self.read_day(table, day).select(LEVEL, START).unique()
        return set(frame.iter_rows())

    def state(self) -> dict[str, object]:
        """What the last run published: `generation`, `through` (the end of the newest hour every
        table has released, ISO 8601) and `key` (the release key's fingerprint)."""
        try:
            return dict(json.loads((self.root / STATE).read_text()))
        except (FileNotFoundError, ValueError):
            return {}

    @property
    def generation(self) -> int:
        return int(str(self.state().get("generation", 0)))

    def through(self) -> dt.datetime | None:
        value = self.state().get("through")
        return dt.datetime.fromisoformat(str(value)) if value else None

    # --- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the release's writer lock (one schedule run at a time: the lander's and a
        `data release` wait for each other), and sweep what a killed run left half-written."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                for leftover in self.root.rglob(".*.parquet"):  # a killed run's temporary file
                    leftover.unlink(missing_ok=True)
                for leftover in self.root.glob(".tmp*"):
                    leftover.unlink(missing_ok=True)
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def add(self, name: str, day: dt.date, rows: pl.DataFrame, schema: dict[str, pl.DataType]) -> None:
        """Add `rows` (new nodes only) to the day's file: old rows kept verbatim, one rename."""
        if rows.height == 0:
            return
        with self._lock:
            path = self.day_file(name, day)
            path.parent.mkdir(parents=True, exist_ok=True)
            new = rows.select(pl.col(c).cast(t) for c, t in schema.items())
            if path.exists():
                new = pl.concat([pl.read_parquet(path), new], how="vertical")
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".parquet")
            os.close(fd)
            try:
                new.write_parquet(tmp)
                with open(tmp, "rb") as handle:
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise

    def publish(self, through: dt.datetime, key: str, summary: dict[str, object]) -> int:
        """Say what is released (readers reload on a new generation) and log the run."""
        self.root.mkdir(parents=True, exist_ok=True)
        generation = self.generation + 1
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump({"generation": generation, "through": through.isoformat(), "key": key}, handle)
        os.replace(tmp, self.root / STATE)
        with open(self.root / "log.ndjson", "a", encoding="utf-8") as log:
            log.write(json.dumps({"generation": generation, **summary}, default=str) + "\n")
        return generation

    def remove_all(self, names: Iterable[str] | None = None) -> None:
        """Drop the release (a rebuild under a new secret starts from nothing)."""
        names = names if names is not None else (*(t.name for t in TABLES), SCALARS)
        for name in names:
            folder = self.root / name
            if folder.is_dir():
                for path in folder.glob("*.parquet"):
                    path.unlink()
        (self.root / STATE).unlink(missing_ok=True)
