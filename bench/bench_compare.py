"""What compare=previous_period and intervals=true cost (issue 25): the engine in-process, each case
plain, with compare and with intervals, in turns (so machine noise hits all three alike), median of
--runs after one warm-up. compare computes the window and the one before it, so it should cost
about twice the plain answer; intervals only a few vectorised columns.

    .venv/bin/python bench/bench_compare.py [--events 10000000] [--days 90] [--seed 7] [--runs 5]

Uses the benchmark data set of bench_endpoints.py (generated once under bench/out/).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import ensure_data, ranked_values  # noqa: E402
from bench_secret import bench_secret  # noqa: E402

from service.api.windows import HOUR, compute_as_of  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.engine.polars import PolarsEngine as Engine  # noqa: E402
from service.engine.requests import FlexibleQuery, GeoHeat, KeywordTimeseries, TopKeywords  # noqa: E402
from service.privacy import Privacy  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    data_dir, _info = ensure_data(args.events, args.days, args.seed)
    frames = EventStore(data_dir).snapshot()
    as_of = compute_as_of(frames.last_event + HOUR, frames.last_event)
    settings = Settings()
    engine = Engine(Privacy(bench_secret(), privacy_params(settings)))
    keyword = ranked_values(engine, frames, as_of, "keyword", 1)[0]
    cases = [
        ("top-keywords 30d limit 500", engine.top_keywords, TopKeywords("30d", 500)),
        ("geo-heat 30d county", engine.geo_heat, GeoHeat("30d", "county")),
        (f"keyword-timeseries 30d hour, #1 keyword {keyword!r}", engine.keyword_timeseries,
         KeywordTimeseries(keyword, "30d", "hour")),
        ("query 30d keyword x day, limit 1000", engine.query,
         FlexibleQuery("30d", {}, ("keyword", "time"), "day", limit=1000)),
    ]
    print(f"{args.events:,} events over {args.days} days, as_of {as_of:%Y-%m-%dT%H:%MZ}, median of {args.runs} runs, ms\n")
    print("| case | plain | compare | compare / plain | intervals | intervals / plain |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, method, request in cases:
        variants = {"plain": request, "compare": dataclasses.replace(request, compare="previous_period"),
                    "intervals": dataclasses.replace(request, intervals=True)}
        times: dict[str, list[float]] = {kind: [] for kind in variants}
        for req in variants.values():  # warm-up
            method(frames, as_of, req)
        for _ in range(args.runs):
            for kind, req in variants.items():
                started = time.perf_counter()
                method(frames, as_of, req)
                times[kind].append(time.perf_counter() - started)
        ms = {kind: statistics.median(values) * 1000 for kind, values in times.items()}
        print(f"| {name} | {ms['plain']:.0f} | {ms['compare']:.0f} | {ms['compare'] / ms['plain']:.2f} | "
              f"{ms['intervals']:.0f} | {ms['intervals'] / ms['plain']:.2f} |")


if __name__ == "__main__":
    main()
