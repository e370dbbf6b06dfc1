"""`python -m service data ...`: load event data (demo data set, or files).

    data demo [--events N] [--days D] [--seed S] [--piece-events P] [--replace] [--no-progress]
    data ingest FILE... [--table suppressions|keyword_changes] [--force] [--no-progress]
    data clickhouse-init [--cluster NAME] [--print]
    data count [--table T] [--since ISO] [--until ISO] [--json]
    data release [--rebuild] [--no-progress]

With SIGNALS_ENGINE=clickhouse, demo and ingest land rows in the ClickHouse tables of
SIGNALS_CLICKHOUSE_URL (set up once with `data clickhouse-init`); quarantine files still go to
the data directory.

Exit codes: 0 done; 1 the command ran but failed (data already present without --replace, a
file refused as a whole, a write error, a store in a state no crash leaves); 2 bad usage
(argparse), a file that does not exist, or no SIGNALS_SECRET (demo and ingest hash the user ids
with it). Rows rejected by the contract do not change the exit
code: they are quarantined and counted in the summary. Nor does a file skipped because its
content is already in the store (`--force` loads it again).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from service import backend
from service.api.windows import floor_hour, hour_end, iso_z
from service.clock import SystemClock
from service.settings import Settings
from service.store import ingest, layout, leftovers, schema

# ClickHouse and the demo generator are imported where used: an ingest into the Parquet store
# need not load them (the command's start is part of every landing's cost).
if TYPE_CHECKING:
    from service.engine.interface import Backend
    from service.store.target import LandingTarget


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `data` command and its subcommands to the top-level parser's subparsers."""
    data = subparsers.add_parser("data", help="load event data into the data directory")
    commands = data.add_subparsers(dest="data_command", required=True, metavar="{demo,ingest,clickhouse-init,count}")

    demo_parser = commands.add_parser(
        "demo",
        help="generate the demo data set",
        description="Generate a realistic demo data set ending at the start of the current UTC hour.",
    )
    demo_parser.add_argument(
        "--events", type=_positive_int, default=1_000_000, help="suppression rows (default 1000000)"
    )
    demo_parser.add_argument("--days", type=_positive_int, default=90, help="days of history (default 90)")
    demo_parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    demo_parser.add_argument(
        "--piece-events", type=_positive_int, default=None,
        help="above this many events, generate and land the data set in pieces of at most this many, "
        "one generation each, so that memory follows the piece, not the data set (default: the demo "
        "generator's PIECE_EVENTS; docs/data.md, 'Large data sets: in pieces')",
    )
    demo_parser.add_argument("--replace", action="store_true", help="replace event data already in the data directory")
    demo_parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    demo_parser.set_defaults(func=run_demo, needs_secret=True)  # hashes the user ids

    ingest_parser = commands.add_parser(
        "ingest",
        help="ingest NDJSON, CSV or Parquet event files",
        description=(
            "Validate event files and land the good rows; rejected rows go to the quarantine "
            "directory with a reason each."
        ),
    )
    ingest_parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help=".ndjson, .jsonl, .csv or .parquet")
    ingest_parser.add_argument("--table", choices=schema.TABLES, help="the table (default: detected from the columns)")
    ingest_parser.add_argument(
        "--force",
        action="store_true",
        help="load files whose content is already in the store (by default they are skipped, so that "
        "running an ingest again after a crash never loads a row twice)",
    )
    ingest_parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    ingest_parser.set_defaults(func=run_ingest, needs_secret=True)  # hashes the user ids

    init_parser = commands.add_parser(
        "clickhouse-init",
        help="create (or migrate) the ClickHouse tables (SIGNALS_CLICKHOUSE_URL); running it again changes nothing",
        description="Create the database and tables the service needs in ClickHouse, where missing, and "
        "bring the columns of existing tables to the current types and codecs (no row is copied or lost).",
    )
    init_parser.add_argument("--cluster", help="a cluster name: replicated local tables and Distributed tables "
                             "sharded by cityHash64(user_id), ON CLUSTER (docs/architecture.md)")
    init_parser.add_argument("--print", dest="print_only", action="store_true",
                             help="print the statements instead of running them")
    init_parser.set_defaults(func=run_clickhouse_init)

    count_parser = commands.add_parser(
        "count",
        help="count the landed events per table (to reconcile with what clients sent)",
        description="Print the exact number of landed (published) rows per table, on either engine; "
        "--since and --until bound the events' ts (since inclusive, until exclusive).",
    )
    count_parser.add_argument("--table", choices=schema.TABLES, help="one table (default: both)")
    count_parser.add_argument("--since", type=_instant, metavar="ISO", help="events at or after this time (UTC if "
                              "no offset)")
    count_parser.add_argument("--until", type=_instant, metavar="ISO", help="events before this time")
    count_parser.add_argument("--json", action="store_true",
                              help='print {"suppressions": n, "keyword_changes": m} (only the table asked, with --table)')
    count_parser.set_defaults(func=run_count)

    release_parser = commands.add_parser(
        "release",
        help="release every closed hour of the store into the privacy release (docs/privacy.md)",
        description="Run the release schedule for the store's dates: every node (hour, quarter, day, ISO week) "
        "closed by the current hour and not yet released is released once, with its noise; nodes already "
        "released are kept as they are. --rebuild drops the release first (after a new SIGNALS_SECRET).",
    )
    release_parser.add_argument("--rebuild", action="store_true",
                                help="drop the release and build it again from the store")
    release_parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    release_parser.set_defaults(func=run_release, needs_secret=True)  # keys the release's noise


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _instant(text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time (e.g. 2026-11-28T14:00:00Z)") from None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


def run_release(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from service.release.builder import ReleaseKeyChanged
    from service.release.schedule import release_now
    from service.store.unavailable import BackendUnavailable

    bar = None if args.no_progress else tqdm(total=0, unit="day", desc="release", disable=None)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.n = done
            bar.refresh()

    try:
        summary = release_now(settings, SystemClock().now(), rebuild=args.rebuild, progress=progress)
    except (BackendUnavailable, ReleaseKeyChanged) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if bar is not None:
            bar.close()
    through = iso_z(summary.through) if summary.through is not None else "nothing (no events)"
    print(f"released {summary.nodes} nodes over {summary.days} days in {summary.seconds:.1f} s; "
          f"the release covers every hour up to {through}")
    return 0


def run_count(args: argparse.Namespace, settings: Settings) -> int:
    from service.store import counting
    from service.store.unavailable import BackendUnavailable

    tables = (args.table,) if args.table else schema.TABLES
    try:
        counts = counting.count(settings, tables, since=args.since, until=args.until)
    except BackendUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(counts))
        return 0
    for table, n in counts.items():
        print(f"{table}: {n:,}")
    return 0


def _target(chosen: Backend) -> LandingTarget | None:
    """Where rows land; None (after saying why) when the backend cannot take them."""
    from service.store.unavailable import BackendUnavailable

    try:
        return chosen.landing_target()
    except BackendUnavailable as exc:
        print(f"error: {exc}; nothing was loaded", file=sys.stderr)
        return None


def run_clickhouse_init(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.clickhouse_url:
        print("error: set SIGNALS_CLICKHOUSE_URL (http(s)://user:password@host:8123/database or "
              "chdb://<directory>)", file=sys.stderr)
        return 2
    from service.clickhouse import schema as ch_schema
    from service.clickhouse.connection import ClickHouseUnavailable

    ch = backend.clickhouse(settings, deadline=False)
    if args.print_only:
        print(";\n\n".join(ch_schema.statements(ch.database, args.cluster)) + ";")
        return 0
    try:
        run = ch_schema.initialise(ch, args.cluster)
    except ClickHouseUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        ch.close()
    for statement in run:
        if statement.startswith("ALTER"):  # an existing table brought to the current schema
            print(f"migrated: {statement}")
    print(f"ClickHouse tables ready in {ch.describe()}" + (f" on cluster {args.cluster}" if args.cluster else ""))
    return 0


def run_demo(args: argparse.Namespace, settings: Settings) -> int:
    from service.demo import generate as demo

    secret = settings.require_secret()
    data_dir = settings.data_dir
    end = floor_hour(SystemClock().now())  # so the newest hour of data is a complete hour
    chosen = backend.choose(settings)
    target = _target(chosen)
    if target is None:
        return 1
    try:
        report = demo.generate_demo(
            data_dir,
            events=args.events,
            days=args.days,
            seed=args.seed,
            end=end,
            secret=secret,
            progress=args.progress,
            replace=args.replace,
            target=target,
            piece_events=args.piece_events or demo.PIECE_EVENTS,
        )
    except demo.DemoDataExistsError:
        where = chosen.describe()
        print(
            f"error: {where} already holds event data; use `data demo --replace` to replace it",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        _landing("failed")
        print(f"error: could not write the demo data to {data_dir}: {exc}", file=sys.stderr)
        return 1
    _landing("landed")
    print(
        f"Demo data in {chosen.describe()}: {report.suppressions:,} suppressions and {report.keyword_changes:,} "
        f"keyword changes from {report.users:,} users, {iso_z(report.start)} to {iso_z(report.end)}, "
        f"{len(report.files)} files in {report.seconds:.1f} s; data generation {report.generation}"
        + (f" ({report.pieces} pieces, one generation each)." if report.pieces > 1 else ".")
    )
    print("Injected bursts:")
    for burst in report.bursts:
        print(f"  {burst.describe()}")
    return 0


def _landing(outcome: str) -> None:
    """Count a landing in the machine's metrics (imported here: `python -m service` points
    prometheus_client at the metrics directory before it is first imported)."""
    from service.observability import metrics

    metrics.LANDINGS.labels(outcome).inc()


def run_ingest(args: argparse.Namespace, settings: Settings) -> int:
    secret = settings.require_secret()
    problems = [
        f"{path}: {'is a directory' if path.is_dir() else 'file not found'}"
        for path in args.files
        if not path.is_file()
    ]
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        print("nothing was ingested", file=sys.stderr)
        return 2
    target = _target(backend.choose(settings))
    if target is None:
        return 1
    now = SystemClock().now()
    try:
        report = ingest.ingest_files(
            settings.data_dir,
            args.files,
            secret=secret,
            now=now,
            table=args.table,
            progress=args.progress,
            force=args.force,
            target=target,
        )
    except leftovers.StoreInconsistent as exc:
        _landing("failed")
        print(f"error: {exc}; nothing was ingested", file=sys.stderr)
        return 1
    except OSError as exc:
        _landing("failed")
        print(f"error: could not write to {settings.data_dir}: {exc}; nothing was ingested", file=sys.stderr)
        return 1
    _landing("landed" if report.landed else "nothing landed")
    for file in report.files:
        if file.error is not None:
            print(f"error: {file.path}: {file.error}", file=sys.stderr)
            continue
        if file.skipped is not None:
            print(f"{file.path}: skipped, {file.skipped}")
            continue
        line = f"{file.path}: {_count(file.accepted, 'row')} accepted into {file.table or '(no table)'}"
        if file.rejected:
            line += f", {file.rejected:,} rejected (see {file.quarantine})"
        print(line)
    landed = "landed" if report.landed else "nothing landed"
    skipped = f", {_count(len(report.skipped), 'file')} skipped" if report.skipped else ""
    print(
        f"Total: {report.accepted:,} accepted, {report.rejected:,} rejected, {_count(len(report.failed), 'file')} "
        f"refused{skipped}; "
        f"{landed}, data generation {report.generation}."
    )
    if report.rejected:
        print(f"Quarantine: {layout.quarantine_dir(settings.data_dir)}")
    if report.rows_in_current_hour and report.newest_event is not None:
        # Answers cover whole hours up to `as_of` (the start of the current hour): say when the
        # rows of this hour are counted, so an operator does not look for them in vain.
        counted_from, latest = hour_end(now), hour_end(report.newest_event)
        rows = report.rows_in_current_hour
        where = "falls in the current hour" if rows == 1 else "fall in the current hour"
        when = f"counted from {iso_z(counted_from)}"
        if latest > counted_from:  # a row up to the allowed clock skew ahead, in the next hour
            where += " or later"
            when += f" (the latest, at {iso_z(report.newest_event)}, from {iso_z(latest)})"
        print(
            f"Note: {_count(rows, 'row')} {where}; answers cover whole hours only, so "
            f"{'it is' if rows == 1 else 'they are'} {when}. Rows of earlier hours are served once the "
            f"workers follow data generation {report.generation} (within seconds)."
        )
    return 1 if report.failed else 0


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
