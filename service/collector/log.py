"""The collector's append-only log of accepted batches, on this machine's disk.

Each accepted request body becomes one batch file in `<data>/events/log/`: the accepted rows
(`event_id`, `type`, the stored columns; Arrow IPC, LZ4) written completely under a temporary
name, fsynced, renamed to its final name and the directory fsynced, all before the collector
answers 202. A batch file is therefore either absent or whole: a kill or a power loss during the
write leaves at most a temporary file (never acknowledged; removed by the lander), and after the
202 the batch survives both.

Events of the hour that is still running are not landed before it ends (answers count whole hours
only, and a landing changes the data version, and so the noise, of its dates: landing the running
hour every few seconds would draw new noise for the same published numbers again and again). The
lander moves them out of the log into `<data>/events/held/h<YYYYMMDDTHH>/`, one file per batch and
hour, written the same way (whole, fsynced, renamed), and lands each hour's files once it has
ended (service/collector/lander.py).

A batch's name sorts by the time it was written and says how many events it holds:
`b<UTC nanoseconds>-<pid>-<sequence>-n<events>.arrow`, so the backlog (events appended but not yet
landed) is counted from the names alone. Several collector processes of one machine append to the
same directory (the pid and sequence keep names apart); the lander (service/collector/lander.py)
is the only one that removes batch files, once they have landed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
import itertools
import os
import re
import threading
import time
import uuid
from pathlib import Path

import polars as pl

from service.store import schema

_NAME = re.compile(r"^b(\d{19,20})-(\d+)-(\d+)-n(\d+)\.arrow$")
_HOUR = "%Y%m%dT%H"
_HOUR_DIR = re.compile(r"^h(\d{8}T\d{2})$")
_HELD = re.compile(r"^b\d{19,20}-\d+-\d+-n\d+-k(\d+)\.arrow$")
TEMPORARY_PREFIX = ".tmp-"
_sequence = itertools.count()
_sequence_lock = threading.Lock()

# The columns of a batch file: every column of both tables (nulls where a table has none).
BATCH_SCHEMA: dict[str, pl.DataType] = {
    "event_id": pl.String(), "type": pl.String(),
    **schema.SUPPRESSIONS_SCHEMA,
    **{name: dtype for name, dtype in schema.KEYWORD_CHANGES_SCHEMA.items()
       if name not in schema.SUPPRESSIONS_SCHEMA},
}


def events_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "events"


def log_dir(data_dir: Path) -> Path:
    return events_dir(data_dir) / "log"


@dataclasses.dataclass(frozen=True, order=True)
class Batch:
    name: str
    events: int

    def path(self, data_dir: Path) -> Path:
        return log_dir(data_dir) / self.name


def held_dir(data_dir: Path) -> Path:
    return events_dir(data_dir) / "held"


@dataclasses.dataclass(frozen=True, order=True)
class Held:
    """The events of one hour from one batch, waiting for their hour to end."""

    hour: dt.datetime
    name: str  # "held/h<hour>/<batch stem>-k<events>.arrow": how the index records it
    events: int

    def path(self, data_dir: Path) -> Path:
        return events_dir(data_dir) / self.name


def held_name(hour: dt.datetime, batch: Batch, events: int) -> str:
    return f"held/h{hour.strftime(_HOUR)}/{batch.name.removesuffix('.arrow')}-k{events}.arrow"


def hold(data_dir: Path, hour: dt.datetime, batch: Batch, frame: pl.DataFrame) -> Held:
    """Write one batch's events of one hour to the held area durably (the same name, and content,
    when done again for the same batch: a round cut short repeats it harmlessly)."""
    held = Held(hour, held_name(hour, batch, frame.height), frame.height)
    _write_whole(held.path(data_dir), frame)
    return held


def held(data_dir: Path, *, before: dt.datetime | None = None) -> list[Held]:
    """The held files, oldest hour first; with `before`, only those of hours that end by then."""
    root = held_dir(data_dir)
    found = []
    try:
        hours = os.listdir(root)
    except FileNotFoundError:
        return []
    for directory in hours:
        match = _HOUR_DIR.match(directory)
        if not match:
            continue
        hour = dt.datetime.strptime(match.group(1), _HOUR).replace(tzinfo=dt.UTC)
        if before is not None and hour >= before:
            continue
        for name in os.listdir(root / directory):
            kept = _HELD.match(name)
            if kept:
                found.append(Held(hour, f"held/{directory}/{name}", int(kept.group(1))))
    return sorted(found)


def read_held(data_dir: Path, item: Held) -> pl.DataFrame:
    return pl.read_ipc(item.path(data_dir))


def remove_held(data_dir: Path, names: list[str]) -> None:
    directories = set()
    for name in names:
        path = events_dir(data_dir) / name
        path.unlink(missing_ok=True)
        directories.add(path.parent)
    for directory in directories:
        fsync_dir(directory)
        with contextlib.suppress(OSError):  # not empty: more of that hour is still held
            directory.rmdir()


def batch_frame(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The rows of both tables as one frame of `BATCH_SCHEMA` (`type` = the table's name)."""
    parts = [frame.with_columns(pl.lit(table).alias("type")) for table, frame in frames.items() if frame.height]
    if not parts:
        return pl.DataFrame(schema=BATCH_SCHEMA)
    joined = pl.concat(parts, how="diagonal")
    return joined.select([pl.col(name).cast(dtype) if name in joined.columns
                          else pl.lit(None, dtype=dtype).alias(name) for name, dtype in BATCH_SCHEMA.items()])


def append(data_dir: Path, frame: pl.DataFrame) -> Batch:
    """Write one batch durably (see the module docstring); returns it once it is on disk."""
    directory = log_dir(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    batch = new_batch(frame.height)
    _write_whole(directory / batch.name, frame)
    return batch


def new_batch(events: int) -> Batch:
    """A new batch's name (module docstring): unique among the collector processes of a machine;
    with the RabbitMQ carrier, the message's id (service/collector/carrier.py), where a random part
    keeps the names of several machines apart."""
    with _sequence_lock:
        sequence = next(_sequence)
    return Batch(f"b{time.time_ns():020d}-{os.getpid()}-{sequence}-n{events}.arrow", events)


def parse_batch(name: str) -> Batch | None:
    """The batch a name stands for (None when it is not a batch's name)."""
    match = _NAME.match(name)
    return Batch(name, int(match.group(4))) if match else None


def frame_bytes(frame: pl.DataFrame) -> bytes:
    """A batch's rows as a batch file holds them (Arrow IPC, LZ4): what the RabbitMQ carrier sends."""
    sink = io.BytesIO()
    frame.write_ipc(sink, compression="lz4")
    return sink.getvalue()


def set_aside_bytes(data_dir: Path, name: str, body: bytes) -> Path:
    """Keep a carried batch that cannot be read in `<data>/events/damaged/` (whole and fsynced before
    the lander acknowledges it to the broker)."""
    target = events_dir(data_dir) / "damaged" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as handle:
        handle.write(body)
        handle.flush()
        os.fsync(handle.fileno())
    fsync_dir(target.parent)
    return target


def _write_whole(final: Path, frame: pl.DataFrame) -> None:
    """Written under a temporary name, fsynced, renamed, the directory fsynced."""
    final.parent.mkdir(parents=True, exist_ok=True)
    temporary = final.parent / f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}"
    try:
        with open(temporary, "wb") as handle:
            frame.write_ipc(handle, compression="lz4")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_dir(final.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def batches(data_dir: Path) -> list[Batch]:
    """The batch files in the log, oldest first."""
    directory = log_dir(data_dir)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        match = _NAME.match(name)
        if match:
            found.append(Batch(name, int(match.group(4))))
    return sorted(found)


def backlog(data_dir: Path) -> tuple[int, float | None]:
    """(events in the log, age in seconds of its oldest batch; None when the log is empty); not
    the held events (`held`), which wait for their hour by design."""
    found = batches(data_dir)
    if not found:
        return 0, None
    oldest = int(_NAME.match(found[0].name).group(1)) / 1e9  # type: ignore[union-attr]
    return sum(batch.events for batch in found), max(0.0, time.time() - oldest)


def read(data_dir: Path, batch: Batch) -> pl.DataFrame:
    return pl.read_ipc(batch.path(data_dir))


def set_aside(data_dir: Path, batch: Batch) -> Path:
    """Move a batch that cannot be read to `<data>/events/damaged/` (kept for the operator)."""
    damaged = events_dir(data_dir) / "damaged"
    damaged.mkdir(parents=True, exist_ok=True)
    target = damaged / batch.name
    os.replace(batch.path(data_dir), target)
    return target


def remove(data_dir: Path, names: list[str]) -> None:
    directory = log_dir(data_dir)
    for name in names:
        (directory / name).unlink(missing_ok=True)
    if names:
        fsync_dir(directory)


def remove_temporary(data_dir: Path, older_than_seconds: float = 600.0) -> int:
    """Temporary files of writes that were cut short (a killed collector: never acknowledged; a
    killed lander: written again by its next round), in the log and the held area."""
    removed = 0
    now = time.time()
    entries = []
    for directory in [log_dir(data_dir), *(held_dir(data_dir).glob("h*"))]:
        try:
            entries += list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
    for entry in entries:
        if entry.name.startswith(TEMPORARY_PREFIX):
            try:
                if now - entry.stat().st_mtime > older_than_seconds:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue
    return removed
