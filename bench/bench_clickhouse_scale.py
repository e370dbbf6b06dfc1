"""The ClickHouse engine (chdb) at ten times bench_endpoints.py's data: 100M events.

bench_endpoints.py compares the engines at 10M events. At 100M the polars engine would hold the
events in each process (about 60 bytes an event: 6 GB, twice with the benchmark's own copy and the
served worker's), past the memory this shared machine grants a benchmark, so this run times the
ClickHouse engine alone, on the same cases (bench_endpoints.py's case table, imported). The 100M events are bench_endpoints.py's 10M (its
chdb copy, bench/out/chdb-<events>-<days>-<seed>, which must exist: run bench_endpoints.py first)
copied `--factor` times in ClickHouse with the user ids remapped per copy (`bitXor(user_id, k x
constant)`: every copy's users are new users, with the same timestamps and dimensions), so cells
have `factor` times the users and rows. Cold as in bench_endpoints.py: no response cache, one
warm-up, median of `--runs`. The whole engine call is timed (SQL, Arrow, privacy stage, shaping).

    .venv/bin/python bench/bench_clickhouse_scale.py [--events 10000000] [--days 90] [--seed 7] [--factor 10] [--runs 3]

Prints a Markdown table and writes bench/out/clickhouse-scale.md and .json.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_endpoints import case_requests, case_subjects, endpoint_of  # noqa: E402  (the one case table)
from bench_secret import bench_secret  # noqa: E402

from service.api.windows import compute_as_of, iso_z  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.clickhouse import schema as ch_schema  # noqa: E402
from service.clickhouse.connection import ClickHouse  # noqa: E402
from service.clickhouse.store import ClickHouseStore  # noqa: E402
from service.clock import SystemClock  # noqa: E402
from service.engine.clickhouse import ClickHouseEngine  # noqa: E402
from service.privacy import Privacy  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store import schema  # noqa: E402

OUT = ROOT / "bench" / "out"
_REMAP = 0x9E3779B97F4A7C15  # a copy k's user ids: user_id XOR k x this (odd: distinct for every k)


def scaled_database(ch: ClickHouse, factor: int) -> ClickHouse:
    """A database `signals_x<factor>` beside the 10M one, holding `factor` remapped copies (built once)."""
    target = ClickHouse(ch.url, database=f"signals_x{factor}")
    ch_schema.initialise(target)
    if target.frame("SELECT count() AS n FROM landings").item():
        return target
    print(f"Copying the events {factor} times into {target.describe()} ...", file=sys.stderr)
    for k in range(factor):
        for table in schema.TABLES:
            columns = [*schema.SCHEMAS[table], "generation"]
            picked = ", ".join(f"bitXor(user_id, toUInt64({k}) * {_REMAP})" if c == "user_id" else c for c in columns)
            target.command(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {picked} FROM {ch.database}.{table}")
    target.command(f"INSERT INTO landings SELECT * FROM {ch.database}.landings")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    directory = OUT / f"chdb-{args.events}-{args.days}-{args.seed}"
    if not directory.is_dir():
        parser.error(f"{directory} is missing: run bench/bench_endpoints.py --events {args.events} first")
    base = ClickHouse(f"chdb://{directory}")
    started = time.perf_counter()
    scaled = scaled_database(base, args.factor)
    copy_seconds = time.perf_counter() - started
    snapshot = ClickHouseStore(scaled).snapshot()
    as_of = compute_as_of(SystemClock().now(), snapshot.last_event)
    bench_secret()
    settings = Settings.from_env()
    engine = ClickHouseEngine(Privacy(settings.require_secret(), privacy_params(settings)))
    rows = []
    for name, request in case_requests(*case_subjects(engine, snapshot, as_of)):
        call = getattr(engine, endpoint_of(request))
        answer = call(snapshot, as_of, request)  # warm-up
        seconds = []
        for _ in range(args.runs):
            begun = time.perf_counter()
            call(snapshot, as_of, request)
            seconds.append(time.perf_counter() - begun)
        rows.append({"case": name, "rows": answer.height, "ms": statistics.median(seconds) * 1000, "seconds": seconds})
        print(f"{name}: {rows[-1]['ms']:.1f} ms", file=sys.stderr)
    import chdb

    lines = [
        f"# ClickHouse engine (chdb) at {sum(snapshot.rows.values()):,} events ({args.factor} x the 10M set)",
        "",
        f"- command: `{shlex.join(sys.orig_argv)}`",
        f"- data: {snapshot.rows['suppressions']:,} suppressions, {snapshot.rows['keyword_changes']:,} keyword changes; "
        f"copied in {copy_seconds:.0f} s (0: reused)",
        f"- as_of {iso_z(as_of)}; median of {args.runs} runs after one warm-up; the whole engine call",
        f"- Python {platform.python_version()}, chdb {chdb.__version__} (ClickHouse {chdb.engine_version})",
        "",
        "| case | rows | ClickHouse (chdb) ms |",
        "|---|---:|---:|",
        *(f"| {r['case']} | {r['rows']:,} | {r['ms']:.1f} |" for r in rows),
    ]
    md = "\n".join(lines)
    print(md)
    (OUT / "clickhouse-scale.md").write_text(md + "\n")
    (OUT / "clickhouse-scale.json").write_text(json.dumps({"args": vars(args), "cases": rows,
                                                           "events": dict(snapshot.rows)}, indent=2) + "\n")


if __name__ == "__main__":
    main()
