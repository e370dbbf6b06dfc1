"""Ingest event files: read, type-check and validate against the contract, quarantine bad rows,
land good rows.

Files are read by their suffix (`.ndjson`/`.jsonl`, `.csv`, `.parquet`: service/store/formats.py,
which also says how each format's value types reach the contract). The table is taken from the
columns (`action` -> keyword_changes, `suppressions` -> suppressions) unless given.

Failure model:

- A file that cannot be used at all (missing, unsupported suffix, unreadable Parquet, columns
  or column types that do not fit the contract) is reported with an `error` and contributes no
  rows; the other files of the call are still ingested. The source file is never modified.
- Row-level recovery where the format allows it (`formats`): a broken NDJSON line or CSV record
  is rejected, its neighbours are kept.
- Rejected rows go to `layout.quarantine_dir` as `<UTC timestamp>-<source stem>.ndjson`, one
  JSON object per line: `{"row_number": n, "reason": "...", "row": <the row>}`; `row` is the
  original JSON object (NDJSON), the row as a JSON object (CSV, Parquet), or the original text as
  a JSON string when the line could not be parsed. `row_number` is the row's number in its file
  (`formats`: the line number for NDJSON, the record number for CSV, the row index for Parquet).
- Good rows of all files, and their quarantine files, land as one generation
  (`writer.write_tables`): all files of the call land together or none does, and the generation
  is bumped at most once. A call holds the store's writer lock from start to end (a second ingest
  waits), and starts by removing the leftovers of a landing that was cut short (`leftovers.sweep`).
- Idempotent per file: the SHA-256 of each file's bytes is recorded with the generation that
  landed it, and a file whose content is already in the store is skipped with a message (not an
  error), as is a second file of the same content in one call; `force` loads it again. So running
  an ingest again after a crash lands each row once, whether or not the crashed run had landed.

All good rows of one call are held in memory until they land; split very large loads into
several calls.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import polars as pl
from tqdm import tqdm

from service.api.windows import floor_hour
from service.store import layout, leftovers, manifests, schema, writer
from service.store.columns import ContractError, check_column_types, check_columns, detect_table
from service.store.formats import parse, read_bytes
from service.store.raw_files import FileError, RawFile
from service.store.target import LandingTarget, ParquetTarget
from service.store.validate import validate_rows

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class FileReport:
    path: Path
    table: str | None
    accepted: int
    rejected: int
    quarantine: Path | None  # where the rejected rows went; None when there were none
    error: str | None = None  # set when the whole file was refused
    skipped: str | None = None  # set when the file was not loaded because its content already was
    sha256: str | None = None  # of the file's bytes, when it could be read


@dataclasses.dataclass(frozen=True)
class IngestReport:
    files: tuple[FileReport, ...]
    generation: int  # the data generation after the call (unchanged when nothing landed)
    written: tuple[Path, ...]  # partition files that landed (none in ClickHouse: rows land in tables)
    swept: leftovers.Swept | None = None  # leftovers of an unfinished landing removed first
    landed: bool = False  # a new generation was published
    newest_event: dt.datetime | None = None  # the latest `ts` among the rows that landed
    # Landed rows at or after the start of the hour that was current at ingest (a row may be a few
    # minutes ahead: row_checks.MAX_FUTURE_SKEW): answers cover whole hours up to `as_of`
    # (service.api.windows), so these are counted from the end of their hour (`windows.hour_end`).
    rows_in_current_hour: int = 0

    @property
    def accepted(self) -> int:
        return sum(f.accepted for f in self.files)

    @property
    def rejected(self) -> int:
        return sum(f.rejected for f in self.files)

    @property
    def failed(self) -> tuple[FileReport, ...]:
        return tuple(f for f in self.files if f.error is not None)

    @property
    def skipped(self) -> tuple[FileReport, ...]:
        return tuple(f for f in self.files if f.skipped is not None)




def ingest_files(
    data_dir: Path,
    paths: Sequence[Path | str],
    *,
    secret: str,
    now: dt.datetime,
    table: str | None = None,
    progress: bool = True,
    force: bool = False,
    on_stage: writer.StageCallback | None = None,
    target: LandingTarget | None = None,
) -> IngestReport:
    """Ingest files into the store; see the module docstring for formats and failure handling.

    `target`: where the good rows land (default: the Parquet store in `data_dir`; the ClickHouse
    tables with SIGNALS_ENGINE=clickhouse: service/store/target.py). Quarantine files land in
    `data_dir` either way.

    `force` loads files whose content is already in the store. `on_stage(stage, done, total)` is
    called before each step: "parsing" before each file, then the landing's steps
    (`writer.StageCallback`).
    """
    if table is not None and table not in schema.SCHEMAS:
        raise ValueError(f"unknown table {table!r}; expected one of {', '.join(schema.TABLES)}")
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    data_dir = Path(data_dir)
    target = target or ParquetTarget(data_dir)

    def waiting() -> None:
        log.warning("another process is writing to %s; waiting for it to finish", data_dir)

    with target.lock(on_wait=waiting):
        swept = target.sweep()
        landed_before = {} if force else target.landed_sources()
        outcomes = _read_all(paths, table, now, secret, landed_before, force, progress, on_stage)
        return _land(target, outcomes, now, swept, on_stage)


@dataclasses.dataclass
class _Outcome:
    """What became of one file while reading and validating."""

    path: Path
    table: str | None
    accepted: int = 0
    rows: pl.DataFrame | None = None  # the good rows, in the stored schema
    rejected: pl.DataFrame | None = None
    error: str | None = None
    skipped: str | None = None
    sha256: str | None = None


def _read_all(
    paths: Sequence[Path | str],
    table: str | None,
    now: dt.datetime,
    secret: str,
    landed_before: dict[str, manifests.LandedSource],
    force: bool,
    progress: bool,
    on_stage: writer.StageCallback | None,
) -> list[_Outcome]:
    outcomes: list[_Outcome] = []
    seen: dict[str, Path] = {}  # content hash -> the first file of this call with it
    with tqdm(total=len(paths), unit="file", desc="ingest", file=sys.stderr, disable=not progress) as bar:
        for index, raw_path in enumerate(paths):
            path = Path(raw_path)
            bar.set_postfix_str(path.name)
            if on_stage is not None:
                on_stage("parsing", index, len(paths))
            outcome = _Outcome(path, table)
            try:
                data = read_bytes(path)
                outcome.sha256 = digest = hashlib.sha256(data).hexdigest()
                if digest in landed_before:
                    earlier = landed_before[digest]
                    outcome.skipped = (
                        f"already in the store: the same content landed in generation {earlier.generation} "
                        f"({earlier.landed_at}, as {earlier.file}); use --force to load it again"
                    )
                elif digest in seen and not force:
                    outcome.skipped = f"same content as {seen[digest]}, earlier in this call"
                else:
                    _validate(outcome, parse(path, data), now, secret)
                    seen.setdefault(digest, path)
            except (FileError, ContractError) as exc:
                outcome.error, outcome.rejected, outcome.rows = str(exc), None, None
            except pl.exceptions.PolarsError as exc:
                # Data shaped in a way nothing above foresaw: refuse this file, keep the others.
                outcome.error, outcome.rejected, outcome.rows = f"could not be processed: {exc}", None, None
            outcomes.append(outcome)
            bar.update(1)
    return outcomes


def _validate(outcome: _Outcome, read: RawFile, now: dt.datetime, secret: str) -> None:
    outcome.rejected = read.unparsed
    if not read.frame.width:  # empty, or no line could be parsed
        return
    outcome.table = outcome.table or detect_table(read.frame.columns)
    if read.typed_columns:
        check_columns(outcome.table, read.frame.columns)
        check_column_types(outcome.table, read.frame.schema, f"this {read.typed_columns} file")
    rows, bad = validate_rows(
        read.frame,
        outcome.table,
        now=now,
        secret=secret,
        row_numbers=read.row_numbers,
        source_rows=read.source_rows,
        text_cells=read.text_cells,
        value_kinds=read.value_kinds,
    )
    outcome.rejected = pl.concat([read.unparsed, bad]).sort("row_number")
    outcome.accepted = rows.height
    outcome.rows = rows


def _land(
    landing: LandingTarget,
    outcomes: list[_Outcome],
    now: dt.datetime,
    swept: leftovers.Swept,
    on_stage: writer.StageCallback | None,
) -> IngestReport:
    good: dict[str, list[pl.DataFrame]] = {name: [] for name in schema.TABLES}
    for outcome in outcomes:
        if outcome.rows is not None and outcome.table is not None:
            good[outcome.table].append(outcome.rows)
    frames = {name: pl.concat(parts) for name, parts in good.items() if parts}
    # Quarantine files land with the rows, as part of the same generation: a failure (or a kill)
    # leaves neither behind, so the report never says "nothing landed" about data that did, and
    # running the ingest again quarantines each row once.
    data_dir = landing.data_dir
    used_names: set[str] = set()
    quarantine: dict[int, Path] = {}
    contents: dict[Path, bytes] = {}
    for index, outcome in enumerate(outcomes):
        if outcome.rejected is not None and outcome.rejected.height:
            target = _quarantine_path(data_dir, outcome.path, now, used_names)
            quarantine[index] = target
            contents[target] = _quarantine_text(outcome.rejected)
    sources = [
        manifests.SourceRecord(sha256=o.sha256, file=o.path.name, table=o.table, rows=o.accepted)
        for o in outcomes
        if o.error is None and o.skipped is None and o.sha256 is not None
    ]
    landed = landing.write_tables(frames, on_stage=on_stage, sources=sources, other_files=contents, now=now)
    generation = landed.generation if landed.generation is not None else landing.read_generation()
    reports = [
        FileReport(
            path=o.path,
            table=o.table,
            accepted=o.accepted if o.error is None else 0,
            rejected=o.rejected.height if o.rejected is not None else 0,
            quarantine=quarantine.get(index),
            error=o.error,
            skipped=o.skipped,
            sha256=o.sha256,
        )
        for index, o in enumerate(outcomes)
    ]
    published = landed.generation is not None
    current_hour = floor_hour(now)
    return IngestReport(
        files=tuple(reports), generation=generation, written=landed.paths, swept=swept, landed=published,
        newest_event=max((cast(dt.datetime, f.get_column("ts").max()) for f in frames.values() if f.height),
                         default=None)
        if published else None,
        rows_in_current_hour=sum(int(f.get_column("ts").ge(current_hour).sum()) for f in frames.values())
        if published else 0,
    )


# ---------------------------------------------------------------------------------------------
# Quarantine


def _quarantine_path(data_dir: Path, source: Path, now: dt.datetime, used: set[str]) -> Path:
    directory = layout.quarantine_dir(data_dir)
    stamp = now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stamp}-{source.stem}"
    name, n = f"{base}.ndjson", 1
    while name in used or (directory / name).exists():
        n += 1
        name = f"{base}-{n}.ndjson"
    used.add(name)
    return directory / name


def _quarantine_text(rejected: pl.DataFrame) -> bytes:
    # {"row_number":..,"reason":..} from polars' JSON encoder, then the row's JSON text spliced in
    # as the last member: it is already JSON, so it is embedded as is, not quoted again.
    head = rejected.select(pl.struct("row_number", "reason").struct.json_encode()).to_series()
    lines = pl.select(pl.concat_str([head.str.head(-1), pl.lit(',"row":'), rejected["row"], pl.lit("}")])).to_series()
    return ("\n".join(lines.to_list()) + "\n").encode("utf-8")
