"""Reading event files: NDJSON, CSV and Parquet, by file suffix, into raw frames for the contract.

Formats: `.ndjson`/`.jsonl` (one JSON object per line), `.csv` (UTF-8, header row, RFC 4180
quoting) and `.parquet`. Reading keeps what the contract needs to check each value's type as the
file gives it (`validate` module docstring), before anything is converted:

- NDJSON: each value's JSON type. The whole file is read at once (pyarrow) when every column
  holds one JSON type; its columns then carry the types. Otherwise (types differ between lines,
  or a line is broken) each line is read on its own and the kind of every value is kept next to
  it, so a `true` among strings is still a boolean when the contract sees it (polars would have
  made every value of that column a string).
- CSV: every cell is text; number columns must be written as integers (`[-]digits`).
- Parquet: each column has one type; a column of a type the contract does not take refuses the
  whole file, naming the column and its type.

A file that cannot be read at all raises `FileError`. Otherwise rows are recovered where the
format allows it: in NDJSON each line stands alone (a broken line is rejected with its line
number, its neighbours are kept); in CSV a record with the wrong number of fields or invalid UTF-8
is rejected and the others are kept. A row's number is the line number for NDJSON, the 1-based
record number after the header for CSV (so spreadsheet row = row_number + 1), the 1-based row
index for Parquet. Ingest (service/store/ingest.py) validates, quarantines and lands what these
readers return.

The readers by format: ndjson.py (`read_ndjson`), csv_reader.py (`read_csv`) and, here,
`read_parquet`; what they return (`RawFile`, `FileError`) lives in raw_files.py.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl

from service.store.csv_reader import read_csv
from service.store.ndjson import read_ndjson
from service.store.raw_files import FileError, RawFile, first_row_numbers, no_rejects

NDJSON_SUFFIXES = (".ndjson", ".jsonl")
CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet",)
SUPPORTED_SUFFIXES = NDJSON_SUFFIXES + CSV_SUFFIXES + PARQUET_SUFFIXES


def read_bytes(path: Path) -> bytes:
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise FileError(f"unsupported file type {path.suffix or '(none)'!r}; use {', '.join(SUPPORTED_SUFFIXES)}")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise FileError("file not found") from None
    except OSError as exc:
        raise FileError(f"cannot read the file: {exc.strerror or exc}") from None


def parse(path: Path, data: bytes) -> RawFile:
    suffix = path.suffix.lower()
    if suffix in NDJSON_SUFFIXES:
        return read_ndjson(data)
    if suffix in CSV_SUFFIXES:
        return read_csv(data)
    return read_parquet(data)


def read_parquet(data: bytes) -> RawFile:
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FileError(f"unreadable Parquet file: {exc}") from None
    return RawFile(frame, first_row_numbers(frame.height), None, no_rejects(), typed_columns="Parquet")
