"""The largest step of a cold capped answer, grouping a window's rows by cell and user
(`engine/measures.py`, `cell_contributions`), keyed three ways on the same 30 days of 100M events:

- `two columns`: the cell's dimension code and the 64-bit user id, as polars groups two keys;
- `one packed key (the engine)`: the user id with its spare low bits holding the cell's codes
  (`engine/polars/cell_keys.py`; the bits a snapshot can spare: `engine/polars/user_keys.py`);
- `one key from dense user numbers`: the same packing over a dense 32-bit number per user (ranked
  here, timed apart), the form a store keeping a user dictionary could give.

Then geo-heat's keyword count (the distinct keywords of each user's first 20 rows in a unit): the
per-user keyword lists on two columns and on the packed key, and the sums alone (the floor any way
of counting keywords pays on top of).

Each variant is timed in turns with the others, in wall seconds and in CPU seconds of the process
(all threads), so that on a shared machine the CPU figure still compares them; every variant's
cells are checked against the first's (`same`).

    .venv/bin/python bench/bench_grouping.py [--events 100000000] [--days 90] [--seed 7] [--runs 2]

Uses the benchmark data set of bench_endpoints.py (generated once under bench/out/).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import ensure_data  # noqa: E402

from service.api.windows import compute_as_of, window_range  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.clock import SystemClock  # noqa: E402
from service.engine.polars.contributions import cell_contributions  # noqa: E402
from service.engine.polars.slicing import time_slice  # noqa: E402
from service.engine.polars.user_keys import spare_bits  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventStore  # noqa: E402

FIRST = 20  # PrivacyParams.keyword_rows_per_user


def timed(run: Callable[[], pl.DataFrame]) -> tuple[float, float, pl.DataFrame]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def canonical(cells: pl.DataFrame, key: str) -> pl.DataFrame:
    return cells.with_columns(pl.col(key).cast(pl.String)).sort(key, nulls_last=True)


def measure(title: str, variants: dict[str, Callable[[], pl.DataFrame]], runs: int, key: str,
            extra: dict[str, float]) -> None:
    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    results: dict[str, pl.DataFrame] = {}
    for _ in range(runs):
        for name, run in variants.items():
            wall, cpu, results[name] = timed(run)
            seconds[name].append((wall, cpu))
    reference = canonical(next(iter(results.values())), key)
    print(f"\n{title}\n\n| variant | wall | CPU | same |\n|---|---:|---:|---|")
    for name, pairs in seconds.items():
        mine = canonical(results[name], key)
        shared = [c for c in reference.columns if c in mine.columns]
        same = "yes" if mine.select(shared).equals(reference.select(shared)) else "no"
        print(f"| {name} | {statistics.median(p[0] for p in pairs):.2f} s | "
              f"{statistics.median(p[1] for p in pairs):.2f} s | {same} |")
    for name, value in extra.items():
        print(f"| {name} | {value:.2f} s | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    data_dir, _ = ensure_data(args.events, args.days, args.seed)
    frames = EventStore(data_dir).snapshot()
    params = privacy_params(Settings.from_env())
    as_of = compute_as_of(SystemClock().now(), frames.last_event)
    rows = time_slice(frames.suppressions, window_range("30d", as_of))
    print(f"{args.events:,} events; 30 days to {as_of:%Y-%m-%d %H:%M} UTC: {rows.height:,} suppression rows; "
          f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")

    started = time.perf_counter()
    bits = spare_bits(frames.suppressions.get_column("user_id"))
    learning = time.perf_counter() - started
    started = time.perf_counter()
    dense = rows.with_columns(pl.col("user_id").rank("dense").cast(pl.UInt64) * (1 << 32))  # 32 bits spare
    numbering = time.perf_counter() - started

    def cells(frame: pl.DataFrame, keys: list[str], user_bits: int, *extra: list[pl.Expr]) -> Callable[[], pl.DataFrame]:
        return lambda: cell_contributions(frame, keys, params, *extra, user_bits=user_bits)[0]

    measure("Grouping by keyword and user (top-keywords 30d)", {
        "two columns": cells(rows, ["keyword"], 0),
        "one packed key (the engine)": cells(rows, ["keyword"], bits),
        "one key from dense user numbers": cells(dense, ["keyword"], 32),
    }, args.runs, "keyword", {f"the snapshot's spare bits ({bits}), once per snapshot": learning,
                              "dense user numbers for the slice, once": numbering})

    city = rows.filter(pl.col("city").is_not_null())
    lists = ([pl.col("keyword").head(FIRST).alias("_k")],
             [pl.col("_k").explode().n_unique().cast(pl.Int64).alias("keyword_count")])
    measure("Geo-heat 30d city: the keyword count", {
        "lists, two columns": cells(city, ["city"], 0, *lists),
        "lists, one packed key (the engine)": cells(city, ["city"], bits, *lists),
        "sums only, one packed key": cells(city, ["city"], bits),
    }, args.runs, "city", {})


if __name__ == "__main__":
    main()
