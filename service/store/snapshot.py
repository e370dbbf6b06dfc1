"""A generation's snapshot: every event table as a list of segments that every process maps.

    <data>/snapshots/g<generation>/<table>-g<G>.arrow      a segment of the table, written by generation G
    <data>/snapshots/g<generation>/spans-<name>.arrow      day_spans of the suppressions (cost index)
    <data>/snapshots/g<generation>/snapshot.json           its segments per table, partition files, date versions

Each segment is uncompressed Arrow IPC with one record batch, sorted by ts, so a column is one
contiguous buffer in the file, at an aligned offset. A process opens it with `pyarrow.memory_map`
and hands the buffers to polars without copying: the pages live once in the OS page cache, however
many workers read them (docs/architecture.md, "One copy of the events per machine"). A table is
its segments in order, each starting at or after the previous one's last event; the reader
concatenates them without copying (`pl.concat(..., rechunk=False)`: one chunk per segment) and
the ts column stays marked sorted.

Segments let a landing cost what it lands, not what the store holds: a landing whose rows all
come at or after the previous snapshot's last event writes one new segment and hard-links the
previous generation's segment files into the new generation's directory (same inode, no copy).
Rows that come earlier merge only the segments they reach (a tail merge), unless they reach the
first: then, as when a code widens or the segment bound is reached, the table is compacted,
rewritten whole into one segment (`consolidate`).

Dimension columns are Arrow dictionary columns: the file holds, per column, the distinct values
once (the dictionary) and a code per row (the indices) in the integer width polars gives an `Enum`
of that many values (UInt8 below 256 values, UInt16 below 65,536, else UInt32). A reader maps the
indices and declares them `Enum(dictionary)`, which is a re-labelling of the same buffer, not a
conversion. A `Categorical` would not do: its codes belong to a process-wide string cache, so every
process would rewrite every code into a private copy.

The Enum of a column must be one dtype over all segments, so a table's dictionaries are append-only
from one segment to the next: a new segment's dictionary is the previous one's followed by the new
values (sorted among themselves), and codes of older segments stay valid. The reader labels every
segment with the newest segment's dictionary. So the dictionary, hence the Enum, is not in string
order once a segment appended values: nothing may order or compare dimension values by their codes
(the engine turns them into strings before it orders anything). A compaction writes sorted
dictionaries again. When an appended value would change the codes' width, the landing compacts
(older segments' codes would no longer fit the Enum's physical type).

Written by the landing writer (`writer.write_tables`, through `consolidate.stage`) in the staging
directory, then renamed into place before GENERATION is published; a reader opens only the snapshot
of the GENERATION it read.

This module says where snapshots live and how they come and go (placed, superseded, removed); the
rest by role: the in-memory form, dimension columns as Enum (encoding.py), writing the files
(snapshot_writing.py), mapping and reading them (snapshot_reading.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from service.store import layout

META_FILE = "snapshot.json"
_SNAPSHOT_NAME = re.compile(r"^g(\d+)$")

# At most this many segments per table; a landing that would add one more compacts the table
# instead. Each segment is a chunk of every column of the served frame: polars runs its kernels
# chunk by chunk and a group-by combines per-chunk partial states, so many small chunks slow every
# query a little, and a reader maps and labels each file. 16 keeps that overhead small (measured in
# docs/benchmarks.md section 18) while a compaction, which rewrites the whole table, comes at most
# once in 16 landings that append.
MAX_SEGMENTS = 16


# ---------------------------------------------------------------------------------------------
# Where snapshots live


def snapshots_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "snapshots"


def snapshot_dir(data_dir: Path, generation: int) -> Path:
    return snapshots_dir(data_dir) / f"g{generation:08d}"


def snapshot_generation(path: Path) -> int | None:
    match = _SNAPSHOT_NAME.match(Path(path).name)
    return int(match.group(1)) if match else None


def existing(data_dir: Path) -> dict[int, Path]:
    """generation -> snapshot directory, for every snapshot in the store."""
    root = snapshots_dir(data_dir)
    if not root.is_dir():
        return {}
    return {
        generation: path
        for path in root.iterdir()
        if (generation := snapshot_generation(path)) is not None and path.is_dir()
    }


def staged_snapshot_dir(data_dir: Path, generation: int) -> Path:
    return layout.staging_dir(data_dir) / f"snapshot-g{generation:08d}"


def segment_name(table: str, generation: int) -> str:
    """The file name of the segment of `table` that generation `generation` wrote."""
    return f"{table}-g{generation:08d}.arrow"


# ---------------------------------------------------------------------------------------------
# Placing and removing


def remove(path: Path) -> None:
    """Delete a snapshot directory. Processes that still map its files keep reading them: the
    kernel frees the pages when the last mapping goes."""
    shutil.rmtree(path, ignore_errors=True)


def unlink_stale(data_dir: Path, keep: int) -> int:
    """Remove every snapshot but generation `keep`'s (older ones nobody will open again, newer ones
    a killed landing left); the number removed."""
    removed = 0
    for generation, path in existing(data_dir).items():
        if generation != keep:
            remove(path)
            removed += 1
    return removed


def place(staged: Path, data_dir: Path, generation: int) -> Path:
    """Rename a staged snapshot into place (atomic: a reader sees all of it or none)."""
    final = snapshot_dir(data_dir, generation)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():  # left by a landing of this generation that was killed before publishing
        remove(final)
    os.replace(staged, final)
    with contextlib.suppress(OSError):
        fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return final
