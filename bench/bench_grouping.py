"""Where a cold 30-day answer at 100M events spends its time, and what other formulations of its
largest step would cost: the per-(cell, user) grouping every privacy-capped answer starts with
(`engine/measures.py`, `cell_contributions`), and geo-heat's keyword count (the keywords of each
user's first rows in a unit, `engine/geo_heat.py`).

Every variant computes the same numbers (checked here against the engine's formulation, and
printed as `same`); each is timed in turns with the others, in wall seconds and in CPU seconds of
the process (all threads), so that on a machine shared with other work the CPU figure still
compares the variants. Variants:

- grouping (30 days of suppressions by keyword and user):
  `hash, 2 keys on 64-bit hashes (engine today)`: polars group_by on (keyword code, user hash);
  `hash, 2 keys on dense numbers`: the same on a dense 32-bit user number;
  `hash, 1 packed key`: one UInt64 key, keyword code x 2^32 + a dense 32-bit user number; the
  dense number is made here by ranking the slice's users (timed apart: a store would keep it
  per generation, as it keeps dimension codes);
  `sort, packed`: the same key with the row's suppressions in its low byte, sorted, summed per run.
- geo-heat city keyword count:
  `lists (engine)`: each (unit, user)'s first 20 keywords as a list, exploded, distinct per unit;
  `ordinal over heavy users`: rows of users with more than 20 rows in some unit numbered within
  their (unit, user), the rest taken whole, distinct (unit, keyword) pairs counted;
  `sums only`: the same grouping without the keyword lists, the floor any formulation pays.

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

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import ensure_data  # noqa: E402

from service.clock import SystemClock  # noqa: E402
from service.engine.polars.slicing import time_slice  # noqa: E402
from service.store.reader import EventStore  # noqa: E402
from service.windows import compute_as_of, window_range  # noqa: E402

FIRST = 20  # PrivacyParams.keyword_rows_per_user


def timed(run: Callable[[], pl.DataFrame]) -> tuple[float, float, pl.DataFrame]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def packed_key() -> pl.Expr:
    """keyword code x 2^32 + the row's dense user number (`user_id` of the numbered slice)."""
    return (pl.col("keyword").to_physical().cast(pl.UInt64) * (1 << 32) + pl.col("user_id").cast(pl.UInt64)).alias("k")


def grouping_variants(rows: pl.DataFrame) -> dict[str, Callable[[], pl.DataFrame]]:
    def engine() -> pl.DataFrame:
        grouped = (rows.lazy().group_by(["keyword", "user_id"])
                   .agg(pl.col("suppressions").cast(pl.Int64).sum().alias("s"), pl.len().alias("n")).collect())
        # Named as the packed variants name a cell and user, to compare them (not part of the timing's point)
        return grouped.select((pl.col("keyword").to_physical().cast(pl.UInt64) * (1 << 32)
                               + pl.col("user_id").cast(pl.UInt64)).alias("k"), "s", "n")

    def one_key() -> pl.DataFrame:
        return (rows.lazy().group_by(packed_key())
                .agg(pl.col("suppressions").cast(pl.Int64).sum().alias("s"), pl.len().alias("n")).collect())

    def sorted_runs() -> pl.DataFrame:
        # The suppressions of a row in the key's low byte: rows above 255 are summed apart.
        small = pl.col("suppressions") <= 255
        key = (packed_key() * 256 + pl.col("suppressions").clip(0, 255).cast(pl.UInt64)).alias("k")
        packed = rows.select(pl.when(small).then(key)).to_series().drop_nulls().sort().to_numpy()
        cell_user, value = packed >> np.uint64(8), (packed & np.uint64(255)).astype(np.int64)
        starts = np.flatnonzero(np.concatenate(([True], cell_user[1:] != cell_user[:-1])))
        runs = pl.DataFrame({"k": cell_user[starts], "s": np.add.reduceat(value, starts),
                             "n": np.diff(np.append(starts, len(cell_user)))})
        large = (rows.lazy().filter(~small).group_by(packed_key())
                 .agg(pl.col("suppressions").cast(pl.Int64).sum().alias("s"), pl.len().alias("n")).collect())
        return pl.concat([runs, large.cast(runs.schema)]).group_by("k").agg(pl.col("s").sum(), pl.col("n").sum())

    return {"hash, 2 keys on dense numbers": engine, "hash, 1 packed key": one_key, "sort, packed": sorted_runs}


def keyword_count_variants(rows: pl.DataFrame, level: str) -> dict[str, Callable[[], pl.DataFrame]]:
    kept = rows.filter(pl.col(level).is_not_null())

    def per_user(*extra: pl.Expr) -> pl.DataFrame:
        return (kept.lazy().group_by([level, "user_id"])
                .agg(pl.col("suppressions").cast(pl.Int64).sum(), pl.len().alias("events"), *extra).collect())

    def lists() -> pl.DataFrame:
        users = per_user(pl.col("keyword").head(FIRST).alias("_k"))
        return users.group_by(level).agg(pl.col("_k").explode().n_unique().cast(pl.Int64).alias("keyword_count"))

    def ordinal() -> pl.DataFrame:
        users = per_user()
        heavy = users.filter(pl.col("events") > FIRST).get_column("user_id").unique()
        marked = kept.lazy().with_columns(_heavy=pl.col("user_id").is_in(heavy.implode()))
        light = marked.filter(~pl.col("_heavy")).group_by([level, "keyword"]).agg()
        firsts = (marked.filter(pl.col("_heavy"))
                  .filter(pl.int_range(pl.len()).over([level, "user_id"]) < FIRST).group_by([level, "keyword"]).agg())
        return (pl.concat([light, firsts]).unique().group_by(level)
                .agg(pl.len().cast(pl.Int64).alias("keyword_count")).collect())

    def sums_only() -> pl.DataFrame:
        return per_user().group_by(level).agg(pl.len().alias("users"))

    return {"lists (engine)": lists, "ordinal over heavy users": ordinal, "sums only": sums_only}


def same(a: pl.DataFrame, b: pl.DataFrame, keys: list[str]) -> str:
    """yes / no: the two agree on every column they share; n/a: they share no keys or no values."""
    shared = [c for c in a.columns if c in b.columns]
    if not set(keys) <= set(shared) or not set(shared) - set(keys):
        return "n/a"
    return "yes" if a.select(shared).sort(keys).equals(b.select(shared).sort(keys)) else "no"


def measure(title: str, variants: dict[str, Callable[[], pl.DataFrame]], runs: int, keys: list[str],
            extra: dict[str, float] | None = None) -> None:
    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    results: dict[str, pl.DataFrame] = {}
    for _ in range(runs):
        for name, run in variants.items():
            wall, cpu, results[name] = timed(run)
            seconds[name].append((wall, cpu))
    reference = next(iter(results.values()))
    print(f"\n{title}\n\n| variant | wall | CPU | same |\n|---|---:|---:|---|")
    for name, pairs in seconds.items():
        print(f"| {name} | {statistics.median(p[0] for p in pairs):.2f} s | "
              f"{statistics.median(p[1] for p in pairs):.2f} s | {same(reference, results[name], keys)} |")
    for name, value in (extra or {}).items():
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
    as_of = compute_as_of(SystemClock().now(), frames.last_event)
    rows = time_slice(frames.suppressions, window_range("30d", as_of))
    print(f"{args.events:,} events; 30 days to {as_of:%Y-%m-%d %H:%M} UTC: {rows.height:,} suppression rows; "
          f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    started = time.perf_counter()
    users = rows.select(pl.col("user_id").rank("dense").cast(pl.UInt32)).to_series()
    numbering = time.perf_counter() - started
    # Every grouping variant keys by the dense user number (the engine's on 64-bit hashes costs
    # more: section 3 of docs/benchmarks.md); the engine's variant is timed on the hashes too.
    numbered = rows.with_columns(user_id=users)
    variants = grouping_variants(numbered)
    variants["hash, 2 keys on 64-bit hashes (engine today)"] = lambda: (
        rows.lazy().group_by(["keyword", "user_id"])
        .agg(pl.col("suppressions").cast(pl.Int64).sum().alias("s"), pl.len().alias("n")).collect())
    measure("Grouping by keyword and user (top-keywords 30d)", variants, args.runs, ["k"],
            {"dense user numbers for the slice (once)": numbering})
    measure("Geo-heat 30d city: keyword count", keyword_count_variants(rows, "city"), args.runs, ["city"])


if __name__ == "__main__":
    main()
