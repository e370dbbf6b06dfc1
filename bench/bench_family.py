"""One-place /query over 90 days, forty different places at once: the family of their cells (every
place of the level, docs/privacy.md "How it works", point 2) is grouped once, not forty times
(publication/query.family_cells). In one process on bench_endpoints.py's 10M data, the polars engine.

    .venv/bin/python bench/bench_family.py [--places 40] [--level city]

Prints the wall time of one query alone (family computed), again (family kept), and of `--places`
queries of other places at once on a fresh engine and snapshot (one computes the family, the others
wait for it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import threading
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import ensure_data  # noqa: E402
from bench_secret import bench_secret  # noqa: E402

from service.api.windows import compute_as_of  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.engine.polars import PolarsEngine  # noqa: E402
from service.engine.requests import FILTER_COLUMNS, FlexibleQuery  # noqa: E402
from service.privacy import Privacy  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--places", type=int, default=40)
    parser.add_argument("--level", choices=("country", "region", "county", "city"), default="city")
    args = parser.parse_args()
    data_dir, _info = ensure_data(10_000_000, 90, 7)
    key = next(k for k, column in FILTER_COLUMNS.items() if column == args.level)
    settings = Settings()

    def fresh() -> tuple[PolarsEngine, object, dt.datetime, list[str]]:
        frames = EventStore(data_dir).snapshot()
        last = frames.suppressions.get_column("ts").max()
        places = frames.suppressions.get_column(args.level).drop_nulls().unique().sort().cast(pl.String)
        return (PolarsEngine(Privacy(bench_secret(), privacy_params(settings))), frames,
                compute_as_of(last + dt.timedelta(hours=1), last), places.head(args.places + 1).to_list())

    engine, frames, as_of, places = fresh()
    for label in ("alone, family computed", "again, family kept"):
        started = time.perf_counter()
        engine.query(frames, as_of, FlexibleQuery("90d", {key: (places[0],)}, (), None))
        print(f"one {args.level}, {label}: {(time.perf_counter() - started) * 1000:.0f} ms")
    engine, frames, as_of, places = fresh()
    threads = [threading.Thread(target=lambda place=place: engine.query(
        frames, as_of, FlexibleQuery("90d", {key: (place,)}, (), None))) for place in places[1:]]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"{len(threads)} {args.level} queries at once: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
