"""The three attacks of issue 41 against the web process, scored against the exact values.

A determined caller with one Professional key asks the real web process (gunicorn, one worker, no
response cache: every answer computed) and averages or differences what it is shown; the raw
events are read only to score the results (exact, uncapped, noise-free values from the Parquet
files):

1. **Cloning.** For each of up to 10 cities with 20-50 users over 30 days: /query of the city padded
   with a value that matches nothing (`"cities": [city, "zz<i>"]`), 30 copies; the mean of the
   copies' `unique_users` against the exact count.
2. **Differencing one town's hours.** A town of 20-50 users over 7 days; /query grouped by hour
   over 7 days of [town + S_i] and of [S_i], S_i 32 different real subsets of 48 of the 60 busiest
   cities (64 requests); the town's hourly users estimated as the mean of the differences. Also
   with one fixed S padded by values that match nothing (64 requests a side).
3. **Sliding windows.** For each of up to 12 cities with 20-50 users over 30 days: /query of the
   city over 30 days at 25 `as_of` hours, each an hour before the next; the mean of the 25 errors
   (published - exact of each window) against one answer's error.

    .venv/bin/python bench/bench_attacks.py [--events 1000000] [--days 90] [--seed 7] [--code DIR] [--label after]

`--code DIR` serves another tree of this project (for the "before" column: an export of the code
before issue 41, e.g. `git archive <commit> | tar -x -C DIR`); the attacks and the scoring are this
file's. Uses the demo data of bench_endpoints.py (bench/out/data-<events>-<days>-<seed>); writes
bench/out/attacks-<label>.md and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import OUT, Pacer, ensure_data, free_port, server_env, wait_ready  # noqa: E402

from service.store.reader import read_table  # noqa: E402

PER_MINUTE = 250  # below the Professional plan's 300 requests a minute
SMALL = (20, 50)  # users of the small places attacked


@contextlib.contextmanager
def served(code: Path, data_dir: Path) -> Iterator[httpx.Client]:
    """The web process of `code` on the data, one worker, no response cache; a client with a new
    Professional key."""
    env = server_env(data_dir)
    made = subprocess.run([sys.executable, "-m", "service", "keys", "create", "--tier", "professional"],
                          cwd=code, env=env, capture_output=True, text=True, check=True)
    key = made.stdout.strip().splitlines()[-1]
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py", "service.wsgi:app"],
        cwd=code, env=server_env(data_dir, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(process, base)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
            yield client
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Caller:
    """Sends /query bodies at the plan's pace; counts them."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.pacer = Pacer(PER_MINUTE)
        self.sent = 0

    def query(self, body: dict[str, Any]) -> httpx.Response:
        for _ in range(5):
            self.pacer.wait()
            resp = self.client.post("/api/v1/signals/query", json=body)
            self.sent += 1
            if resp.status_code == 429:
                time.sleep(float(resp.headers.get("Retry-After", "5")))
                continue
            resp.raise_for_status()
            return resp
        raise SystemExit(f"refused five times: {body}")

    def rows(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return self.query(body).json()["results"]


class Truth:
    """Exact values from the stored suppressions."""

    def __init__(self, data_dir: Path) -> None:
        frame = read_table(data_dir, "suppressions")
        self.events = frame.select("ts", "user_id", pl.col("city").cast(pl.String), "suppressions")

    def window(self, end: dt.datetime, hours: int) -> pl.DataFrame:
        return self.events.filter((pl.col("ts") >= end - dt.timedelta(hours=hours)) & (pl.col("ts") < end))

    def users_by_city(self, end: dt.datetime, hours: int) -> dict[str, int]:
        counts = self.window(end, hours).drop_nulls("city").group_by("city").agg(pl.col("user_id").n_unique())
        return dict(zip(counts.get_column("city").to_list(), counts.get_column("user_id").to_list(), strict=True))

    def hourly_users(self, end: dt.datetime, hours: int, city: str) -> dict[dt.datetime, int]:
        rows = self.window(end, hours).filter(pl.col("city") == city) \
            .group_by(pl.col("ts").dt.truncate("1h")).agg(pl.col("user_id").n_unique())
        return {ts.replace(tzinfo=dt.UTC) if ts.tzinfo is None else ts: n for ts, n in rows.iter_rows()}


def _small(counts: dict[str, int], most: int, rng: random.Random) -> list[str]:
    places = sorted(city for city, n in counts.items() if SMALL[0] <= n <= SMALL[1])
    return rng.sample(places, min(most, len(places)))


def _sd(values: list[float]) -> float:
    return statistics.pstdev(values) if len(values) > 1 else float("nan")


def cloning(caller: Caller, truth: Truth, as_of: dt.datetime, rng: random.Random) -> dict[str, Any]:
    exact = truth.users_by_city(as_of, 30 * 24)
    towns = _small(exact, 10, rng)
    single, averaged, distinct = [], [], []
    for town in towns:
        seen = [caller.rows({"window": "30d", "filters": {"cities": [town, f"zz{i}"]}})[0]["unique_users"]
                for i in range(30)]
        single.append(seen[0] - exact[town])
        averaged.append(statistics.fmean(seen) - exact[town])
        distinct.append(len(set(seen)))
    return {"places": len(towns), "copies": 30, "single_sd": _sd(single), "averaged_sd": _sd(averaged),
            "single_exact": sum(round(e) == 0 for e in single), "averaged_exact": sum(round(e) == 0 for e in averaged),
            "distinct_answers": statistics.fmean(distinct) if distinct else float("nan")}


def _hourly(caller: Caller, cities: list[str]) -> dict[str, int]:
    rows = caller.rows({"window": "7d", "filters": {"cities": cities}, "group_by": ["time"], "bucket": "hour",
                        "limit": 1000})
    return {row["ts"]: row["unique_users"] for row in rows}


def differencing(caller: Caller, truth: Truth, as_of: dt.datetime, rng: random.Random) -> dict[str, Any]:
    week = truth.users_by_city(as_of, 7 * 24)
    busiest = sorted(week, key=lambda c: -week[c])[:60]
    town = _small({c: n for c, n in week.items() if c not in busiest}, 1, rng)[0]
    exact = truth.hourly_users(as_of, 7 * 24, town)
    hours = [as_of - dt.timedelta(hours=h) for h in range(7 * 24, 0, -1)]
    key = [h.strftime("%Y-%m-%dT%H:%M:%SZ") for h in hours]
    truth_h = [exact.get(h, 0) for h in hours]

    def score(pairs: list[tuple[dict[str, int], dict[str, int]]]) -> tuple[float, int]:
        estimate = [statistics.fmean(a.get(k, 0) - b.get(k, 0) for a, b in pairs) for k in key]
        errors = [e - t for e, t in zip(estimate, truth_h, strict=True)]
        return _sd(errors), sum(round(e) == 0 for e in errors)

    real = []
    for _ in range(32):
        subset = rng.sample(busiest, 48)
        real.append((_hourly(caller, [town, *subset]), _hourly(caller, subset)))
    fixed = rng.sample(busiest, 48)
    junk = [(_hourly(caller, [town, *fixed, f"zz{i}"]), _hourly(caller, [*fixed, f"zy{i}"])) for i in range(64)]
    one_sd, one_exact = score(real[:1])
    real_sd, real_exact = score(real)
    junk_sd, junk_exact = score(junk)
    return {"town_users": week[town], "hours": len(key), "one_sd": one_sd, "one_exact": one_exact,
            "real_sd": real_sd, "real_exact": real_exact, "junk_sd": junk_sd, "junk_exact": junk_exact}


def sliding(caller: Caller, truth: Truth, as_of: dt.datetime, rng: random.Random) -> dict[str, Any]:
    exact0 = truth.users_by_city(as_of, 30 * 24)
    places = _small(exact0, 12, rng)
    single, averaged, single_exact, mean_exact = [], [], 0, 0
    for place in places:
        errors, published = [], []
        for k in range(25):
            end = as_of - dt.timedelta(hours=k)
            value = caller.rows({"window": "30d", "filters": {"cities": [place]},
                                 "as_of": end.strftime("%Y-%m-%dT%H:%M:%SZ")})[0]["unique_users"]
            exact = truth.users_by_city(end, 30 * 24).get(place, 0)
            errors.append(value - exact)
            published.append(value)
        single.append(errors[0])
        averaged.append(statistics.fmean(errors))
        single_exact += published[0] == exact0[place]
        mean_exact += round(statistics.fmean(published)) == exact0[place]
    return {"places": len(places), "windows": 25, "single_sd": _sd(single), "averaged_sd": _sd(averaged),
            "single_exact": single_exact, "averaged_exact": mean_exact}


def report(label: str, events: int, days: int, results: dict[str, dict[str, Any]], sent: int, seconds: float) -> str:
    c, d, s = results["cloning"], results["differencing"], results["sliding"]
    lines = [
        f"## Attacks ({label}): {events:,} events over {days} days, {sent} requests, {seconds:.0f} s",
        "",
        "| attack | one answer | what the attack gets |",
        "|---|---|---|",
        f"| 1. cloning: {c['places']} cities of 20-50 users over 30 days, {c['copies']} padded copies each; "
        f"error s.d. of users (exact of {c['places']}) | {c['single_sd']:.2f} ({c['single_exact']}) | "
        f"{c['averaged_sd']:.2f} ({c['averaged_exact']}); {c['distinct_answers']:.1f} distinct answers a city |",
        f"| 2. differencing a town of {d['town_users']} users, hourly users over 7 days, 32 real subsets "
        f"(64 requests); error s.d. (hours exact of {d['hours']}) | {d['one_sd']:.2f} ({d['one_exact']}) | "
        f"{d['real_sd']:.2f} ({d['real_exact']}) |",
        f"| 2b. the same with one subset padded by values matching nothing (128 requests) | | "
        f"{d['junk_sd']:.2f} ({d['junk_exact']}) |",
        f"| 3. sliding: {s['places']} cities of 20-50 users, 30 days at {s['windows']} as_of an hour apart; "
        f"error s.d. of users (exact of {s['places']}) | {s['single_sd']:.2f} ({s['single_exact']}) | "
        f"{s['averaged_sd']:.2f} ({s['averaged_exact']}); the mean keeps "
        f"{s['averaged_sd'] / s['single_sd']:.2f} of one answer's error |",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--code", type=Path, default=ROOT, help="the code tree to serve (default: this one)")
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    data_dir, _info = ensure_data(args.events, args.days, args.seed)
    truth = Truth(data_dir)
    started = time.monotonic()
    with served(args.code.resolve(), data_dir) as client:
        caller = Caller(client)
        first = caller.query({"window": "30d"})
        as_of = dt.datetime.fromisoformat(first.headers["X-Signals-As-Of"].replace("Z", "+00:00"))
        results = {}
        for name, attack in (("cloning", cloning), ("differencing", differencing), ("sliding", sliding)):
            results[name] = attack(caller, truth, as_of, random.Random(f"{args.seed}-{name}"))
            print(name, results[name], file=sys.stderr)
    text = report(args.label, args.events, args.days, results, caller.sent, time.monotonic() - started)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"attacks-{args.label}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
