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

`landed_sources` answers "is this file already in the store?" from the manifests of published
generations, so that running an ingest again after a crash does not land the same rows twice.

`replacing` is the transaction of `data demo --replace`: the tables are moved aside while new
data lands (in one or several generations), then deleted, or moved back if the landing fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import fcntl
import json
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

import polars as pl

from service.store import consolidate, layout, schema, snapshot

log = logging.getLogger(__name__)

COMPRESSION: Final = "zstd"
# `replacing` moves the old tables into the staging directory under names with this prefix;
# `sweep` never removes those (they may be the only copy of the old data).
REPLACED_PREFIX = "replaced-"

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


@dataclasses.dataclass(frozen=True)
class SourceRecord:
    """A source file whose rows a generation landed (for `landed_sources`)."""

    sha256: str
    file: str  # its name when it was ingested
    table: str | None
    rows: int  # rows accepted from it


@dataclasses.dataclass(frozen=True)
class LandedSource:
    sha256: str
    file: str
    generation: int
    landed_at: str  # ISO 8601, UTC


@dataclasses.dataclass(frozen=True)
class Swept:
    """What `sweep` removed."""

    generation: int | None  # the unfinished generation whose files were removed, if any
    partitions: int = 0
    other_files: int = 0  # quarantine files of the unfinished generation
    manifests: int = 0
    staged: int = 0  # entries of the staging directory
    temporary: int = 0  # other temporary files
    snapshots: int = 0  # snapshot of the unfinished generation (placed, not published)

    @property
    def removed(self) -> bool:
        return bool(self.partitions or self.other_files or self.manifests or self.staged or self.temporary
                    or self.snapshots)

    def describe(self) -> str:
        parts = []
        if self.generation is not None:
            parts.append(
                f"generation {self.generation} (never published): {_n(self.partitions, 'partition file')}, "
                f"{_n(self.other_files, 'quarantine file')}, {_n(self.manifests, 'manifest')}"
                + (f", {_n(self.snapshots, 'snapshot')}" if self.snapshots else "")
            )
        if self.staged:
            parts.append(f"{_n(self.staged, 'staged file')} in .staging")
        if self.temporary:
            parts.append(_n(self.temporary, "temporary file"))
        return "; ".join(parts)


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


class StoreBusy(Exception):
    """Another process holds the writer lock (an ingest is running)."""


class StoreInconsistent(Exception):
    """The store holds files that no unfinished landing can explain; nothing is touched."""


# ---------------------------------------------------------------------------------------------
# The writer lock


_held = threading.local()  # data directories this thread holds the lock of -> depth


@contextlib.contextmanager
def lock(data_dir: Path, *, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the store's writer lock (re-entrant within a thread).

    With `wait`, blocks until the lock is free (calling `on_wait` first, if it has to wait);
    without, raises StoreBusy.
    """
    key = Path(data_dir).resolve()
    dirs = _held.__dict__.setdefault("dirs", {})
    if dirs.get(key, 0):
        dirs[key] += 1
        try:
            yield
        finally:
            dirs[key] -= 1
        return
    key.mkdir(parents=True, exist_ok=True)
    fd = os.open(key / layout.LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            if not wait:
                raise StoreBusy(f"another process is writing to {data_dir}") from None
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        dirs[key] = 1
        try:
            yield
        finally:
            dirs.pop(key, None)
    finally:
        os.close(fd)  # releases the lock


# ---------------------------------------------------------------------------------------------
# Leftovers of unfinished landings


def sweep(data_dir: Path) -> Swept:
    """Remove what a writer killed before publishing left behind; log what was removed.

    Takes the writer lock (waiting for it), so it never touches a landing in progress. Removes the
    files of the unfinished generation GENERATION + 1 (partition files by name, other files by its
    manifest), its manifest, everything in the staging directory, and stray temporary files.
    Raises StoreInconsistent, removing nothing, when files of a generation beyond GENERATION + 1
    exist: no crash leaves those (GENERATION was changed by hand, or lost), and removing them
    could destroy published data.
    """
    data_dir = Path(data_dir)
    with lock(data_dir):
        current = layout.read_generation(data_dir)
        manifests = {
            path: generation
            for path in (layout.generations_dir(data_dir).glob("g*.json"))
            if (generation := layout.manifest_generation(path)) is not None and generation > current
        }
        partitions = [
            path
            for table in schema.TABLES
            for path in layout.table_dir(data_dir, table).glob("date=*/*.parquet")
            if layout.file_generation(path) > current
        ]
        above = set(manifests.values()) | {layout.file_generation(path) for path in partitions}
        if above - {current + 1}:
            raise StoreInconsistent(
                f"{data_dir / layout.GENERATION_FILE} says {current}, but the store holds files of generation "
                f"{', '.join(str(g) for g in sorted(above))}: not a landing that was cut short. Nothing was "
                "removed; restore GENERATION to the last generation that was published."
            )
        other_files = 0
        for manifest in manifests:
            for relative in _manifest_entries(manifest, "other_files"):
                path = _inside(data_dir, relative)
                if path is not None and path.is_file():
                    path.unlink()
                    other_files += 1
        for path in partitions:
            path.unlink(missing_ok=True)
        for directory in {path.parent for path in partitions}:
            with contextlib.suppress(OSError):
                directory.rmdir()  # only when empty
        for manifest in manifests:
            manifest.unlink(missing_ok=True)
        staged = 0
        staging = layout.staging_dir(data_dir)
        for entry in sorted(staging.iterdir()) if staging.is_dir() else ():
            if entry.name.startswith(REPLACED_PREFIX):
                # `data demo --replace` moves the old tables here while it writes (and may be doing
                # so now); if it died, this is the only copy of the old data: never removed here.
                log.debug("not removing %s: tables moved aside by `data demo --replace`", entry)
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink(missing_ok=True)
            staged += 1
        temporary = 0
        for path in [*data_dir.glob(".generation-*"), *layout.quarantine_dir(data_dir).glob(".quarantine-*")]:
            path.unlink(missing_ok=True)
            temporary += 1
        snapshots = 0
        for generation, path in snapshot.existing(data_dir).items():
            if generation > current:  # placed by a landing killed before publishing
                snapshot.remove(path)
                snapshots += 1
                above.add(generation)
            elif generation < current:  # superseded; a landing killed after publishing left it
                snapshot.remove(path)
                log.info("removed the snapshot of generation %d (generation %d is published)", generation, current)
        swept = Swept(
            generation=current + 1 if above else None,
            partitions=len(partitions),
            other_files=other_files,
            manifests=len(manifests),
            staged=staged,
            temporary=temporary,
            snapshots=snapshots,
        )
    if swept.removed:
        log.warning("removed the leftovers of an unfinished ingest in %s: %s", data_dir, swept.describe())
    return swept


def sweep_if_idle(data_dir: Path) -> Swept | None:
    """`sweep` unless a writer is at work (then None: its files are not leftovers). For the web
    process at start; problems are logged, never raised, since serving matters more."""
    try:
        with lock(data_dir, wait=False):
            return sweep(data_dir)
    except StoreBusy:
        log.info("an ingest is running in %s; not looking for leftovers", data_dir)
    except StoreInconsistent as exc:
        log.error("%s", exc)
    except OSError as exc:
        log.warning("could not look for leftovers of unfinished ingests in %s: %s", data_dir, exc)
    return None


def _manifest_entries(path: Path, key: str) -> list[str]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get(key, [])
    except (OSError, ValueError, AttributeError):
        return []
    return [entry for entry in entries if isinstance(entry, str)] if isinstance(entries, list) else []


def _inside(data_dir: Path, relative: str) -> Path | None:
    """data_dir / relative, unless that leaves the data directory."""
    path = data_dir / relative
    try:
        path.resolve().relative_to(data_dir.resolve())
    except ValueError:
        return None
    return path


def landed_sources(data_dir: Path) -> dict[str, LandedSource]:
    """Source files (by SHA-256 of their bytes) whose rows are in the store: recorded by a
    published generation whose partition files are still there (`data demo --replace` removes
    them). The latest landing of a content wins."""
    data_dir = Path(data_dir)
    current = layout.read_generation(data_dir)
    found: dict[str, LandedSource] = {}
    for path in sorted(layout.generations_dir(data_dir).glob("g*.json")):
        generation = layout.manifest_generation(path)
        if generation is None or generation > current:
            continue
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("unreadable manifest %s; the files it records may be ingested again", path)
            continue
        partitions = manifest.get("partitions", [])
        if not any((data_dir / relative).exists() for relative in partitions):
            continue
        for source in manifest.get("sources", []):
            found[source["sha256"]] = LandedSource(
                source["sha256"], source["file"], generation, manifest.get("landed_at", "")
            )
    return found


# ---------------------------------------------------------------------------------------------
# Landing


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


# ---------------------------------------------------------------------------------------------
# Replacing the tables


@contextlib.contextmanager
def replacing(data_dir: Path) -> Iterator[None]:
    """Move the table directories aside; delete them on success, move them back on failure.

    A demo in pieces publishes a generation per piece inside this block. If a later piece fails,
    the generations published so far held the new rows only: after moving the old tables back,
    the current generation's snapshot (the new rows) is removed and one more generation is
    published with no snapshot, so readers read the restored partition files (and caches keyed
    on the generation do not serve what the pieces showed); the next landing writes a snapshot.
    """
    data_dir = Path(data_dir)
    aside = layout.staging_dir(data_dir) / f"{REPLACED_PREFIX}{uuid.uuid4().hex}"
    aside.mkdir(parents=True)
    before = layout.read_generation(data_dir)
    moved: list[tuple[Path, Path]] = []
    try:
        for table in schema.TABLES:
            source = layout.table_dir(data_dir, table)
            if source.exists():
                source.rename(aside / table)
                moved.append((source, aside / table))
        yield
    except BaseException:
        for source, target in moved:
            if source.exists():
                shutil.rmtree(source)
            target.rename(source)
        if not moved:  # nothing to move back, but the pieces landed so far go too
            for table in schema.TABLES:
                shutil.rmtree(layout.table_dir(data_dir, table), ignore_errors=True)
        with lock(data_dir):
            current = layout.read_generation(data_dir)
            if current != before:
                snapshot.remove(snapshot.snapshot_dir(data_dir, current))
                layout.write_generation(data_dir, current + 1)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
