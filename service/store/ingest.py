"""Ingest event files: read, validate against the contract, quarantine bad rows, land good rows.

Formats by file suffix: `.ndjson`/`.jsonl` (one JSON object per line), `.csv` (UTF-8, header
row, RFC 4180 quoting) and `.parquet`. The table is taken from the columns (`action` ->
keyword_changes, `suppressions` -> suppressions) unless given.

Failure model:

- A file that cannot be used at all (missing, unsupported suffix, unreadable Parquet, columns
  that do not fit the contract) is reported with an `error` and contributes no rows; the other
  files of the call are still ingested. The source file is never modified.
- Row-level recovery where the format allows it: in NDJSON each line stands alone (a broken line
  is rejected with its line number, its neighbours are kept); in CSV a record with the wrong
  number of fields or invalid UTF-8 is rejected and the others are kept.
- Rejected rows go to `layout.quarantine_dir` as `<UTC timestamp>-<source stem>.ndjson`, one
  JSON object per line: `{"row_number": n, "reason": "...", "row": <the row>}`; `row` is the
  original JSON object (NDJSON), the row as a JSON object (CSV, Parquet), or the original text as
  a JSON string when the line could not be parsed. `row_number` is the line number for NDJSON
  and the 1-based record number after the header for CSV (so spreadsheet row = row_number + 1),
  the 1-based row index for Parquet.
- Good rows of all files land in one `writer.write_tables` call: all files of the call land
  together or none does, and the generation is bumped at most once. Quarantine files are written
  before the landing and removed again if it fails, so a rerun starts clean.

All good rows of one call are held in memory until they land; split very large loads into
several calls.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl
from tqdm import tqdm

from service.store import contract, layout, schema, writer

NDJSON_SUFFIXES = (".ndjson", ".jsonl")
CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet",)
SUPPORTED_SUFFIXES = NDJSON_SUFFIXES + CSV_SUFFIXES + PARQUET_SUFFIXES


class FileError(Exception):
    """A file that cannot be ingested at all; the message says why."""


@dataclasses.dataclass(frozen=True)
class FileReport:
    path: Path
    table: str | None
    accepted: int
    rejected: int
    quarantine: Path | None  # where the rejected rows went; None when there were none
    error: str | None = None  # set when the whole file was refused


@dataclasses.dataclass(frozen=True)
class IngestReport:
    files: tuple[FileReport, ...]
    generation: int  # the data generation after the call (unchanged when nothing landed)
    written: tuple[Path, ...]  # partition files that landed

    @property
    def accepted(self) -> int:
        return sum(f.accepted for f in self.files)

    @property
    def rejected(self) -> int:
        return sum(f.rejected for f in self.files)

    @property
    def failed(self) -> tuple[FileReport, ...]:
        return tuple(f for f in self.files if f.error is not None)


@dataclasses.dataclass
class _Read:
    """A file as a raw frame, plus the rows that could not even be parsed."""

    frame: pl.DataFrame
    row_numbers: pl.Series
    source_rows: pl.Series | None
    unparsed: pl.DataFrame  # contract.REJECTED_SCHEMA


def ingest_files(
    data_dir: Path,
    paths: Sequence[Path | str],
    *,
    secret: str,
    now: dt.datetime,
    table: str | None = None,
    progress: bool = True,
) -> IngestReport:
    """Ingest files into the store; see the module docstring for formats and failure handling."""
    if table is not None and table not in schema.SCHEMAS:
        raise ValueError(f"unknown table {table!r}; expected one of {', '.join(schema.TABLES)}")
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    data_dir = Path(data_dir)
    good: dict[str, list[pl.DataFrame]] = {name: [] for name in schema.TABLES}
    outcomes: list[_Outcome] = []

    with tqdm(total=len(paths), unit="file", desc="ingest", file=sys.stderr, disable=not progress) as bar:
        for raw_path in paths:
            path = Path(raw_path)
            bar.set_postfix_str(path.name)
            outcome = _Outcome(path, table)
            try:
                read = _read(path)
                outcome.rejected = read.unparsed
                if read.frame.width:  # else: empty, or no line could be parsed
                    outcome.table = outcome.table or contract.detect_table(read.frame.columns)
                    rows, bad = contract.validate_rows(
                        read.frame,
                        outcome.table,
                        now=now,
                        secret=secret,
                        row_numbers=read.row_numbers,
                        source_rows=read.source_rows,
                    )
                    outcome.rejected = pl.concat([read.unparsed, bad]).sort("row_number")
                    outcome.accepted = rows.height
                    good[outcome.table].append(rows)
            except (FileError, contract.ContractError) as exc:
                outcome.error, outcome.rejected = str(exc), None
            except pl.exceptions.PolarsError as exc:
                # Data shaped in a way nothing above foresaw: refuse this file, keep the others.
                outcome.error, outcome.rejected = f"could not be processed: {exc}", None
            outcomes.append(outcome)
            bar.update(1)

    frames = {name: pl.concat(parts) for name, parts in good.items() if parts}
    # Quarantine first, then land: a failure anywhere leaves neither data nor quarantine files
    # behind, so the report never says "nothing landed" about data that did (and a rerun is safe).
    used_names: set[str] = set()
    quarantined: dict[int, Path] = {}
    try:
        for index, o in enumerate(outcomes):
            if o.rejected is not None and o.rejected.height:
                quarantined[index] = _write_quarantine(data_dir, o.path, o.rejected, now, used_names)
        landed = writer.write_tables(data_dir, frames)
    except BaseException:
        for path in quarantined.values():
            path.unlink(missing_ok=True)
        raise
    generation = landed.generation if landed.generation is not None else layout.read_generation(data_dir)

    reports = [
        FileReport(
            path=o.path,
            table=o.table,
            accepted=o.accepted if o.error is None else 0,
            rejected=o.rejected.height if o.rejected is not None else 0,
            quarantine=quarantined.get(index),
            error=o.error,
        )
        for index, o in enumerate(outcomes)
    ]
    return IngestReport(files=tuple(reports), generation=generation, written=landed.paths)


@dataclasses.dataclass
class _Outcome:
    """What became of one file while reading and validating."""

    path: Path
    table: str | None
    accepted: int = 0
    rejected: pl.DataFrame | None = None
    error: str | None = None


# ---------------------------------------------------------------------------------------------
# Reading


def _read(path: Path) -> _Read:
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise FileError(f"unsupported file type {path.suffix or '(none)'!r}; use {', '.join(SUPPORTED_SUFFIXES)}")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileError("file not found") from None
    except OSError as exc:
        raise FileError(f"cannot read the file: {exc.strerror or exc}") from None
    if suffix in NDJSON_SUFFIXES:
        return _read_ndjson(data)
    if suffix in CSV_SUFFIXES:
        return _read_csv(data)
    return _read_parquet(path, data)


def _no_rejects() -> pl.DataFrame:
    return pl.DataFrame(schema=contract.REJECTED_SCHEMA)


def _rejects(rows: Iterable[tuple[int, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=contract.REJECTED_SCHEMA, orient="row")


def _numbers(values: Iterable[int]) -> pl.Series:
    return pl.Series("row_number", list(values), dtype=pl.Int64)


def _read_ndjson(data: bytes) -> _Read:
    lines = data.split(b"\n")
    # Line numbers of the non-blank lines; polars skips blank lines, so this keeps both aligned.
    numbers = [i for i, line in enumerate(lines, start=1) if line.strip()]
    texts = [lines[i - 1].rstrip(b"\r") for i in numbers]
    if not texts:
        return _Read(pl.DataFrame(), _numbers([]), None, _no_rejects())
    try:
        frame = pl.read_ndjson(io.BytesIO(b"\n".join(texts)), infer_schema_length=None)
        if frame.height == len(texts):
            source = pl.Series("row", texts, dtype=pl.Binary).cast(pl.String)
            return _Read(frame, _numbers(numbers), source, _no_rejects())
    except (pl.exceptions.PolarsError, UnicodeDecodeError):
        pass
    return _read_ndjson_by_line(numbers, texts)


def _read_ndjson_by_line(numbers: list[int], texts: list[bytes]) -> _Read:
    """The slow path for a file polars could not read whole: each line on its own.

    Values are kept as text (non-string scalars as their JSON spelling) so lines whose types
    disagree with each other still form one frame; the contract parses them as it does CSV.
    """
    records: list[dict[str, str | None]] = []
    kept_numbers: list[int] = []
    kept_texts: list[str] = []
    rejects: list[tuple[int, str, str]] = []
    columns: dict[str, None] = {}
    for number, raw in zip(numbers, texts, strict=True):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            rejects.append((number, "line is not valid UTF-8", json.dumps(raw.decode("utf-8", "replace"))))
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            rejects.append((number, f"invalid JSON: {exc.msg} at column {exc.colno}", json.dumps(text)))
            continue
        except RecursionError:
            rejects.append((number, "invalid JSON: nested too deeply", json.dumps(text[:200])))
            continue
        if not isinstance(value, dict):
            rejects.append((number, f"not a JSON object but {_json_kind(value)}", text))
            continue
        for key in value:
            columns.setdefault(key, None)
        records.append({k: v if v is None or isinstance(v, str) else json.dumps(v) for k, v in value.items()})
        kept_numbers.append(number)
        kept_texts.append(text)
    frame = pl.DataFrame(records, schema=dict.fromkeys(columns, pl.String), orient="row") if records else pl.DataFrame()
    source = pl.Series("row", kept_texts, dtype=pl.String)
    return _Read(frame, _numbers(kept_numbers), source, _rejects(rejects))


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _read_csv(data: bytes) -> _Read:
    # polars is fast but lenient: it pads short records with nulls and turns blank lines into
    # empty rows. It is used only when the file is plainly regular (no quoting, no blank lines,
    # the same number of separators on every line); anything else goes through Python's csv
    # module, which checks each record.
    if _plain_csv(data):
        try:
            frame = pl.read_csv(io.BytesIO(data), infer_schema=False)
            return _Read(frame, _numbers(range(1, frame.height + 1)), None, _no_rejects())
        except pl.exceptions.PolarsError:
            pass
    return _read_csv_by_record(data)


def _plain_csv(data: bytes) -> bool:
    if b'"' in data or b"\r" in data.replace(b"\r\n", b""):
        return False
    body = data.replace(b"\r\n", b"\n").rstrip(b"\n")
    if not body or b"\n\n" in body:
        return False
    header_fields = body.split(b"\n", 1)[0].count(b",") + 1
    lines = body.count(b"\n") + 1
    return body.count(b",") == (header_fields - 1) * lines


def _read_csv_by_record(data: bytes) -> _Read:
    """The slow path for a CSV polars refused: Python's csv module, one record at a time."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # surrogateescape keeps undecodable bytes visible, so only the records holding them fail.
    reader = csv.reader(io.StringIO(data.decode("utf-8", "surrogateescape"), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return _Read(pl.DataFrame(), _numbers([]), None, _no_rejects())
    except csv.Error as exc:
        raise FileError(f"unreadable CSV header: {exc}") from None
    if _has_surrogates(header):
        raise FileError("the CSV header is not valid UTF-8")
    if len(set(header)) != len(header):
        raise FileError(f"the CSV header repeats a column name: {', '.join(header)}")
    rows: list[list[str | None]] = []
    numbers: list[int] = []
    rejects: list[tuple[int, str, str]] = []
    number = 0
    while True:
        number += 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            rejects.append((number, f"malformed CSV record: {exc}", json.dumps(None)))
            continue
        if not record:  # a blank line is not a record
            number -= 1
            continue
        if _has_surrogates(record):
            shown = [field.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for field in record]
            rejects.append((number, "record is not valid UTF-8", json.dumps(shown, ensure_ascii=False)))
            continue
        if len(record) != len(header):
            rejects.append(
                (number, f"expected {len(header)} fields, found {len(record)}", json.dumps(record, ensure_ascii=False))
            )
            continue
        rows.append([field if field != "" else None for field in record])
        numbers.append(number)
    frame = pl.DataFrame(rows, schema=dict.fromkeys(header, pl.String), orient="row")
    return _Read(frame, _numbers(numbers), None, _rejects(rejects))


def _has_surrogates(fields: list[str]) -> bool:
    return any(not field.isascii() and any("\udc80" <= ch <= "\udcff" for ch in field) for field in fields)


def _read_parquet(path: Path, data: bytes) -> _Read:
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise FileError(f"unreadable Parquet file: {exc}") from None
    return _Read(frame, _numbers(range(1, frame.height + 1)), None, _no_rejects())


# ---------------------------------------------------------------------------------------------
# Quarantine


def _write_quarantine(data_dir: Path, source: Path, rejected: pl.DataFrame, now: dt.datetime, used: set[str]) -> Path:
    directory = layout.quarantine_dir(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    stamp = now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stamp}-{source.stem}"
    name, n = f"{base}.ndjson", 1
    while name in used or (directory / name).exists():
        n += 1
        name = f"{base}-{n}.ndjson"
    used.add(name)
    # {"row_number":..,"reason":..} from polars' JSON encoder, then the row's JSON text spliced in
    # as the last member: it is already JSON, so it is embedded as is, not quoted again.
    head = rejected.select(pl.struct("row_number", "reason").struct.json_encode()).to_series()
    lines = pl.select(pl.concat_str([head.str.head(-1), pl.lit(',"row":'), rejected["row"], pl.lit("}")])).to_series()
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".quarantine-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines.to_list()) + "\n")
        target = directory / name
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
