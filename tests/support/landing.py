"""Landing helpers only the tests need (the service lands data with `writer.write_tables`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from service.store.layout import read_generation, write_generation
from service.store.writer import write_tables


def write_events(data_dir: Path, table: str, frame: pl.DataFrame) -> list[Path]:
    """Land the rows of one table (stored schema) and bump the generation once."""
    return list(write_tables(data_dir, {table: frame}).paths)


def bump_generation(data_dir: Path) -> int:
    """Increment the generation number (atomically, as the writer does) and return it."""
    new = read_generation(data_dir) + 1
    write_generation(data_dir, new)
    return new
