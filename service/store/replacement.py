"""`replacing` is the transaction of `data demo --replace`: the tables are moved aside while new
data lands (in one or several generations), then deleted, or moved back if the landing fails."""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from service.store import layout, schema, snapshot
from service.store.writer_lock import lock

# `replacing` moves the old tables into the staging directory under names with this prefix;
# `sweep` never removes those (they may be the only copy of the old data).
REPLACED_PREFIX = "replaced-"


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
