"""Removing what a landing killed before publishing left behind. `sweep` runs in the next writer
(`writer.write_tables`, under the writer lock) and in the web process at start (`sweep_if_idle`),
and logs what it removed: the files of the unfinished generation GENERATION + 1, its manifest, the
staging directory's entries (never the tables `replacing` moved aside), stray temporary files, and
snapshots placed but not published or superseded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
from pathlib import Path

from service.store import layout, schema, snapshot
from service.store.manifests import manifest_entries
from service.store.replacement import REPLACED_PREFIX
from service.store.writer_lock import StoreBusy, lock

# The landing's logger, whose name its lines carry (docs/data.md quotes them), as before writer.py was split.
log = logging.getLogger("service.store.writer")


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


class StoreInconsistent(Exception):
    """The store holds files that no unfinished landing can explain; nothing is touched."""


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
            for relative in manifest_entries(manifest, "other_files"):
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


def _inside(data_dir: Path, relative: str) -> Path | None:
    """data_dir / relative, unless that leaves the data directory."""
    path = data_dir / relative
    try:
        path.resolve().relative_to(data_dir.resolve())
    except ValueError:
        return None
    return path
