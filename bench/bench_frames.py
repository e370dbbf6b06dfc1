"""The engine on the mapped snapshot against the engine on private frames laid out as before issue 22
(dimension columns Categorical, every column in this process's own memory), on the same data, in
the same process, runs interleaved: what the new layout costs or saves per endpoint, with the
machine's noise spread over both alike.

Every case of bench_endpoints.py (same requests, same privacy stage) is run --runs times on each
layout after one warm-up; medians in ms. Both answers are also compared (they must be equal: the
noise is keyed on the cell descriptions and data versions, not on the layout).

    .venv/bin/python bench/bench_frames.py [--events 10000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_endpoints import Noiseless, Sources, build_cases, ensure_data  # noqa: E402
from bench_secret import bench_secret  # noqa: E402

from service.api.windows import compute_as_of  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.clock import SystemClock  # noqa: E402
from service.engine.polars import PolarsEngine as Engine  # noqa: E402
from service.privacy import Privacy  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store import schema  # noqa: E402
from service.store.reader import EventFrames, EventStore  # noqa: E402


def private_categorical(frames: EventFrames) -> EventFrames:
    """The same rows as the store served them before: Categorical dimensions, every column copied
    into this process's memory (a gather allocates new buffers; `clone` would share them)."""
    def convert(frame: pl.DataFrame, table: str) -> pl.DataFrame:
        every = pl.int_range(0, frame.height, eager=True)
        return pl.DataFrame([
            frame.get_column(c).cast(pl.String).cast(pl.Categorical) if c in schema.DIMENSIONS[table]
            else frame.get_column(c).gather(every)
            for c in frame.columns
        ]).with_columns(pl.col("ts").set_sorted())
    return dataclasses.replace(frames, suppressions=convert(frames.suppressions, schema.SUPPRESSIONS),
                               keyword_changes=convert(frames.keyword_changes, schema.KEYWORD_CHANGES), spans=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    data_dir, _info = ensure_data(args.events, args.days, args.seed)
    settings = Settings()
    engine = Engine(Privacy(bench_secret(), privacy_params(settings)))
    checked = Engine(Noiseless(bench_secret(), privacy_params(settings)))
    mapped = EventStore(data_dir).snapshot()
    layouts = {"mapped (Enum)": mapped, "private (Categorical)": private_categorical(mapped)}
    as_of = compute_as_of(SystemClock().now(), mapped.last_event)
    cases = build_cases(checked, mapped, as_of, Sources.of(data_dir, privacy_params(settings)))
    print(f"`.venv/bin/python bench/bench_frames.py --events {args.events} --runs {args.runs}`; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| case | mapped (Enum) ms | private (Categorical) ms | private/mapped | same answer |")
    print("|---|---:|---:|---:|---|")
    for case in cases:
        method = getattr(engine, case.endpoint)
        times: dict[str, list[float]] = {name: [] for name in layouts}
        answers = {name: method(frames, as_of, case.request) for name, frames in layouts.items()}  # warm-up
        for _ in range(args.runs):
            for name, frames in layouts.items():
                started = time.perf_counter()
                method(frames, as_of, case.request)
                times[name].append(time.perf_counter() - started)
        new, old = (statistics.median(times[name]) * 1000 for name in layouts)
        same = answers["mapped (Enum)"].equals(answers["private (Categorical)"])
        print(f"| {case.name} | {new:,.0f} | {old:,.0f} | {old / new:.2f} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
