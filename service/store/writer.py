"""Landing event rows in the store: one generation at a time, all or nothing.

One writer at a time: `lock` holds an exclusive `flock` on `<data>/.lock` (released by the
kernel when the process ends, however it ends). Under it, `write_tables` lands a generation N =
GENERATION + 1 in steps, each safe to be killed in:

1. staging: every file is written completely under `layout.staging_dir` (same file system as the
   partitions, so renames are atomic) and fsynced;
2. the manifest `generations/g<N>.json` is written (by rename): the partition files and other
   files (quarantine) the generation will put in place, and the source files' SHA-256 hashes;
3. renaming: the files are renamed to `<table>/date=YYYY-MM-DD/part-g<N>-<uuid4 hex>.parquet`
   (and the quarantine's own names);
4. snapshot: generation N's snapshot (every row of the generation in mappable segment files per
   table: a new segment beside the previous generation's, hard-linked, or one rewritten segment;
   `snapshot`, `consolidate`) is written under the staging directory, then renamed to
   `snapshots/g<N>`;
5. publishing: GENERATION is set to N (by rename). Afterwards the snapshots of earlier generations
   are deleted: processes that still map them keep reading them until they let go.

Readers take only files (and the snapshot) of generations up to GENERATION (`reader`), so before
step 5 nothing of generation N is visible, and after it all of it is. An exception on the way
removes what this call wrote; a killed writer leaves its files behind, and `sweep` (run by the next
writer, and by the web process at start) removes them, with a log line saying what it removed.

The parts beside the transaction: the lock (writer_lock.py), the leftovers (leftovers.py), the
manifests and the sources they record (manifests.py), and `data demo --replace`'s transaction
(replacement.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

import polars as pl

from service.store import consolidate, layout, schema, snapshot
from service.store.leftovers import sweep
from service.store.manifests import SourceRecord
from service.store.writer_lock import lock

COMPRESSION: Final = "zstd"

# on_stage(stage, done, total) is called before each step of a landing: "staging" and "renaming"
# before each file, "compacting" before a table's snapshot is rewritten whole, "snapshot" before
# each file of the snapshot is written, "linking" before each segment file of the previous snapshot
# is hard-linked into the new one (`consolidate.stage`), "publishing" when GENERATION's new
# value is written but not yet renamed into place, "published" after. For callers that follow progress (the command line passes none); the
# crash tests pause a real ingest there to kill it (tests/support/pausing_ingest.py).
StageCallback = Callable[[str, int, int], None]


@dataclasses.dataclass(frozen=True)
class WriteResult:
    paths: tuple[Path, ...]  # the landed partition files
    generation: int | None  # the new generation; None when there was nothing to write


def check_schema(table: str, frame: pl.DataFrame) -> None:
    """Raise ValueError unless `frame` has exactly the stored columns, order and types."""
    expected = schema.SCHEMAS[table]
    actual = dict(frame.schema)
    if actual != expected:
        raise ValueError(f"frame for {table} does not have the stored schema: expected {expected}, got {actual}")


def write_tables(
    data_dir: Path,
    frames: Mapping[str, pl.DataFrame],
    *,
    on_file: Callable[[], None] | None = None,
    on_stage: StageCallback | None = None,
    sources: Sequence[SourceRecord] = (),
    other_files: Mapping[Path, bytes] | None = None,
    now: dt.datetime | None = None,
) -> WriteResult:
    """Land rows of one or both tables as one generation: one file per table and UTC day.

    `other_files` (path in the data directory -> content; the quarantine) land with the rows, as
    part of the same generation; `sources` are recorded in its manifest. With no rows, the other
    files are written on their own and the generation stays. `on_file` is called after each staged
    partition file (progress bars), `on_stage` before each step (see StageCallback).
    """
    data_dir = Path(data_dir)
    for table, frame in frames.items():
        if table not in schema.SCHEMAS:
            raise ValueError(f"unknown table {table!r}")
        check_schema(table, frame)
    extras = dict(other_files or {})
    stage = on_stage or (lambda _stage, _done, _total: None)
    with lock(data_dir):
        sweep(data_dir)
        if not any(frame.height for frame in frames.values()):
            _write_plain(data_dir, extras)
            return WriteResult((), None)
        generation = layout.read_generation(data_dir) + 1
        staging = layout.staging_dir(data_dir)
        staging.mkdir(parents=True, exist_ok=True)
        days = [(table, day, rows) for table, frame in frames.items() for day, rows in _split_by_day(frame)]
        planned: list[tuple[Path, Path]] = []  # (staged, final): partition files
        planned_extras: list[tuple[Path, Path]] = []
        total = len(days) + len(extras)
        landed: list[Path] = []
        manifest = layout.manifest_path(data_dir, generation)
        try:
            for table, day, rows in days:
                stage("staging", len(planned), total)
                name = uuid.uuid4().hex
                staged = staging / f"g{generation:08d}-{table}-{day}-{name}.parquet"
                final = layout.partition_dir(data_dir, table, day) / layout.partition_file_name(generation, name)
                planned.append((staged, final))
                _write_staged(rows, staged)
                if on_file is not None:
                    on_file()
            for final, content in extras.items():
                stage("staging", len(planned) + len(planned_extras), total)
                staged = staging / f"g{generation:08d}-{uuid.uuid4().hex}-{Path(final).name}"
                planned_extras.append((staged, Path(final)))
                _write_bytes(staged, content)
            record = {
                "generation": generation,
                "landed_at": (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "sources": [dataclasses.asdict(source) for source in sources],
                "partitions": [final.relative_to(data_dir).as_posix() for _staged, final in planned],
                "other_files": [_relative(data_dir, final) for _staged, final in planned_extras],
            }
            staged_manifest = staging / f"g{generation:08d}-manifest.json"
            _write_bytes(staged_manifest, json.dumps(record, indent=1).encode("utf-8"))
            manifest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged_manifest, manifest)
            _fsync_dir(manifest.parent)
            for index, (staged, final) in enumerate([*planned_extras, *planned]):
                stage("renaming", index, total)
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, final)
                landed.append(final)
            for directory in {final.parent for final in landed}:
                _fsync_dir(directory)
            staged_snapshot = consolidate.stage(
                data_dir, generation, frames, [final.relative_to(data_dir).as_posix() for _staged, final in planned],
                on_stage=stage,
            )
            snapshot.place(staged_snapshot, data_dir, generation)
            layout.write_generation(data_dir, generation, before_publishing=lambda: stage("publishing", 0, 1))
        except BaseException:
            # Not published, so not landed: remove what this call wrote (a killed process leaves it
            # to the next sweep instead).
            for path in landed:
                path.unlink(missing_ok=True)
            for staged, _final in [*planned, *planned_extras]:
                staged.unlink(missing_ok=True)
            manifest.unlink(missing_ok=True)
            snapshot.remove(snapshot.staged_snapshot_dir(data_dir, generation))
            snapshot.remove(snapshot.snapshot_dir(data_dir, generation))
            raise
        _fsync_dir(data_dir)
        stage("published", 1, 1)
        # Published: earlier snapshots are not opened again (mapped ones stay readable).
        snapshot.unlink_stale(data_dir, keep=generation)
    return WriteResult(tuple(final for _staged, final in planned), generation)


def _relative(data_dir: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(data_dir.resolve()).as_posix()
    except ValueError:
        raise ValueError(f"{path} is not inside the data directory {data_dir}") from None


def _write_plain(data_dir: Path, files: Mapping[Path, bytes]) -> None:
    """Files outside any generation (a quarantine when no row landed): staged, then renamed."""
    staging = layout.staging_dir(data_dir)
    placed: list[Path] = []
    try:
        for final, content in files.items():
            _relative(data_dir, Path(final))
            staging.mkdir(parents=True, exist_ok=True)
            staged = staging / f"plain-{uuid.uuid4().hex}-{Path(final).name}"
            try:
                _write_bytes(staged, content)
                Path(final).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, final)
            finally:
                staged.unlink(missing_ok=True)
            placed.append(Path(final))
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        raise


def _split_by_day(frame: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """(YYYY-MM-DD, rows sorted by ts) per UTC day, oldest first.

    One sort of the whole frame (none when it comes in time order, as landings usually do), then
    zero-copy slices between day boundaries: cheaper than grouping and sorting each day on its own.
    """
    if frame.height == 0:
        return []
    ordered = frame if frame.get_column("ts").is_sorted() else frame.sort("ts")
    days = ordered.get_column("ts").dt.date()
    boundaries = days.search_sorted(days.unique(maintain_order=True), side="left").to_list() + [ordered.height]
    return [
        (str(days[start]), ordered.slice(start, end - start))
        for start, end in zip(boundaries[:-1], boundaries[1:], strict=True)
    ]


def _write_staged(frame: pl.DataFrame, path: Path) -> None:
    frame.write_parquet(path, compression=COMPRESSION, statistics=True)
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _write_bytes(path: Path, content: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(directory: Path) -> None:
    # Makes the renames durable; some platforms cannot open directories, which is fine.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
