"""Ingest throughput (issue 22): events per second that `python -m service data ingest` lands, from
Parquet and from NDJSON, into an empty store and into stores of N events.

    .venv/bin/python bench/bench_ingest.py [--rows 1000000] [--stores 0 10000000 30000000] \
        [--formats parquet ndjson] [--runs 3] [--code DIR]

The input: --rows suppressions in the ingest contract's raw form (user ids as text, `ts` as ISO 8601
strings with `Z`, every dimension as text), drawn from the demo data set of that many events
(bench/out/data-<rows>-90-7, shared with bench_endpoints.py, generated once), with the times
spread, in order, from the end of the largest store's data (with --stores 0 alone: the start of
yesterday, UTC) to now (so the rows come after every store's last event: the usual landing, which
appends a segment; not in the future, or ingest would refuse them). The same rows as Parquet (zstd) and NDJSON, in bench/out/ingest-<rows>/.

Each store of N events is the demo data set of N events (bench/out/data-N-90-7, generated once);
each run lands into a scratch copy of it (files hard-linked, as in bench_memory.py: landings never
change a file in place), its snapshot in the one-file format from before segments (which both the
old code and this one read: the same start for both; this code appends a segment to it), or into
an empty directory for N = 0. Each run is the real command line
in a process of its own, timed with /usr/bin/time: wall seconds (process start included), CPU
seconds (user + sys, all threads) and peak RSS. events/s = rows / wall.

--snapshot-step measures, in this process and for each store of N > 0 events, only the snapshot
step of landing the --rows (validated once) into a scratch copy: appending a segment against a
compaction of the same landing (forced with MAX_SEGMENTS = 1), and how long a worker holding the
store takes to follow the new generation against a fresh worker:

    .venv/bin/python bench/bench_ingest.py --rows 1000000 --stores 10000000 --snapshot-step

--code DIR runs the command line of another checkout of the project (e.g. the commit before a
change, extracted with `git archive <commit> | tar -x -C DIR`) with this checkout's virtualenv,
so that before and after run on the same inputs and stores, interleaved run by run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_endpoints import ensure_data  # noqa: E402
from bench_memory import scratch_store  # noqa: E402
from bench_secret import bench_secret  # noqa: E402

from service.store import layout, reader, schema, snapshot, snapshot_reading  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
DIMENSIONS = ("keyword", "domain", "platform", "page_context", "country", "region", "county", "city")


def make_inputs(rows: int, after: dt.datetime) -> dict[str, Path]:
    """The input files (module docstring); reused when they exist and start after `after`."""
    directory = OUT / f"ingest-{rows}"
    stamp = directory / "after.txt"
    files = {"parquet": directory / "in.parquet", "ndjson": directory / "in.ndjson"}
    if stamp.is_file() and dt.datetime.fromisoformat(stamp.read_text().strip()) >= after and all(
            path.is_file() for path in files.values()):
        return files
    source, _info = ensure_data(rows, 90, 7)
    frames = reader.load_frames(source, layout.read_generation(source))
    rows_frame = frames.suppressions.head(rows)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(seconds=30)
    if now <= after:
        raise SystemExit(f"the stores' data ends at {after}, after now: wait a minute")
    span_us = int((now - after).total_seconds() * 1e6)
    step = pl.int_range(0, rows_frame.height, eager=True) * (span_us // max(rows_frame.height, 1))
    raw = rows_frame.select(
        (pl.lit(after) + pl.duration(microseconds=step)).dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").alias("ts"),
        (pl.lit("bench-ingest-") + (pl.col("user_id") % 200_000).cast(pl.String)).alias("user_id"),
        *(pl.col(c).cast(pl.String) for c in DIMENSIONS),
        pl.col("suppressions"),
    )
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    raw.write_parquet(files["parquet"], compression="zstd")
    raw.write_ndjson(files["ndjson"])
    stamp.write_text(after.isoformat())
    return files


def store_end(events: int) -> dt.datetime:
    data_dir, info = ensure_data(events, 90, 7)
    return dt.datetime.fromisoformat(info["end"].replace("Z", "+00:00"))


def as_one_file_snapshot(data_dir: Path) -> None:
    """The store's snapshot in the format before segments (`<table>.arrow`, no segment list), which
    both the code before segments and this code read: the same starting point for either."""
    directory = snapshot.snapshot_dir(data_dir, layout.read_generation(data_dir))
    meta = snapshot_reading.read_meta(directory)
    if "segments" not in meta:
        return
    for table in schema.TABLES:
        (name,) = meta["segments"][table]  # a store landed by `data demo`: one segment a table
        os.rename(directory / name, directory / f"{table}.arrow")
    del meta["segments"]
    fresh = directory / (snapshot.META_FILE + ".new")  # the old one is a hard link: replaced, not written
    fresh.write_text(json.dumps(meta, indent=1))
    os.replace(fresh, directory / snapshot.META_FILE)


def run_once(code: Path, data_dir: Path, path: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one `data ingest`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "REDIS_URL"))}
    env.update(SIGNALS_DATA_DIR=str(data_dir), PYTHONPATH=str(code), SIGNALS_SECRET=bench_secret())
    timing = Path(tempfile.mktemp(prefix="bench-ingest-time-"))
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(timing), sys.executable, "-m", "service", "data",
         "ingest", str(path), "--no-progress"], cwd=code, env=env, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"ingest failed ({code}):\n{done.stdout}\n{done.stderr}")
    wall, user, system, rss = timing.read_text().split()[-4:]
    timing.unlink()
    return float(wall), float(user) + float(system), int(rss) / 1024


def snapshot_step(rows: int, events: int, path: Path) -> None:
    import time

    from service.store import formats, validate, writer

    cpu, wall = time.process_time, time.perf_counter
    source = ensure_data(events, 90, 7)[0]
    read = formats.parse(path, path.read_bytes())
    landed, _rejected = validate.validate_rows(read.frame, schema.SUPPRESSIONS, now=dt.datetime.now(dt.UTC),
                                               secret="bench")
    for mode in ("append", "compaction"):
        with tempfile.TemporaryDirectory(prefix="bench-ingest-", dir=OUT) as scratch:
            data_dir = Path(scratch) / "data"
            scratch_store(source, data_dir)
            as_one_file_snapshot(data_dir)
            store = reader.EventStore(data_dir, check_interval=0)
            store.snapshot()
            marks: dict[str, tuple[float, float]] = {}
            bound = snapshot.MAX_SEGMENTS
            snapshot.MAX_SEGMENTS = 1 if mode == "compaction" else bound
            try:
                writer.write_tables(data_dir, {schema.SUPPRESSIONS: landed},
                                    on_stage=lambda name, _d, _t, marks=marks: marks.setdefault(name, (cpu(), wall())))
            finally:
                snapshot.MAX_SEGMENTS = bound
            first = min(marks[name] for name in ("compacting", "snapshot") if name in marks)
            end = marks["publishing"]
            started = (cpu(), wall())
            store.snapshot()
            followed = (cpu() - started[0], wall() - started[1])
            started = (cpu(), wall())
            reader.EventStore(data_dir).snapshot()
            fresh = (cpu() - started[0], wall() - started[1])
            print(f"| {events:,} | {mode} | {end[0] - first[0]:.2f} / {end[1] - first[1]:.2f} | "
                  f"{followed[0]:.2f} / {followed[1]:.2f} | {fresh[0]:.2f} / {fresh[1]:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--stores", type=int, nargs="+", default=[0, 10_000_000])
    parser.add_argument("--formats", nargs="+", default=["parquet", "ndjson"], choices=["parquet", "ndjson"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--snapshot-step", action="store_true", help="only the snapshot step (docstring)")
    parser.add_argument("--code", type=Path, action="append", default=[],
                        help="another checkout to run beside this one (repeatable)")
    args = parser.parse_args()
    stores = {events: ensure_data(events, 90, 7)[0] if events else None for events in args.stores}
    # With no store to follow, the rows are a day or two of events, as a daily landing's are (spread
    # over months they would write a partition file for each of hundreds of days).
    yesterday = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=1)
    after = max([store_end(events) for events in args.stores if events] or [yesterday])
    inputs = make_inputs(args.rows, after)
    if args.snapshot_step:
        print(f"\n{args.rows:,} events landed; CPU s / wall s\n")
        print("| store | landing | snapshot step | following worker | fresh worker |")
        print("|---|---|---:|---:|---:|")
        for events in (e for e in args.stores if e):
            snapshot_step(args.rows, events, inputs["parquet"])
        return
    codes = [ROOT, *[c.resolve() for c in args.code]]
    results: dict[tuple, list[tuple[float, float, float]]] = {}
    for run in range(args.runs):
        for events, source in stores.items():
            for fmt in args.formats:
                for code in codes:
                    with tempfile.TemporaryDirectory(prefix="bench-ingest-", dir=OUT) as scratch:
                        data_dir = Path(scratch) / "data"
                        if source is not None:
                            scratch_store(source, data_dir)
                            as_one_file_snapshot(data_dir)
                        measured = run_once(code, data_dir, inputs[fmt])
                    results.setdefault((events, fmt, code), []).append(measured)
                    print(f"run {run + 1}: store {events:,}, {fmt}, {code}: wall {measured[0]:.1f} s, "
                          f"CPU {measured[1]:.1f} s, peak RSS {measured[2]:,.0f} MiB", file=sys.stderr)
    print(f"\n{args.rows:,} events a landing; medians of {args.runs} runs\n")
    print("| store | format | code | wall s | events/s (wall) | CPU s | events/s (CPU) | peak RSS MiB |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for (events, fmt, code), measured in results.items():
        wall = statistics.median(m[0] for m in measured)
        cpu = statistics.median(m[1] for m in measured)
        rss = statistics.median(m[2] for m in measured)
        name = "this" if code == ROOT else code.name
        print(f"| {events:,} | {fmt} | {name} | {wall:.1f} | {args.rows / wall:,.0f} | {cpu:.1f} | "
              f"{args.rows / cpu:,.0f} | {rss:,.0f} |")


if __name__ == "__main__":
    main()
