"""One evaluation round of the trending-alert worker for 10,000 webhooks on the 10M-event data.

10,000 webhooks (1,000 subscriptions x 10, the most each may have) with configurations drawn at
random from every (window, dimension, metric) and two min_baselines (10, 50), thresholds 50..2000 %,
cooldown 60 min, are created in a fresh accounts database (SQLite file by default; --accounts-url
for PostgreSQL). The worker's `evaluate` is then timed as it runs in the worker: read the enabled
webhooks, compute each distinct (window, dimension, metric, min_baseline) trending answer once
with the engine and privacy stage as served, pick each webhook's alerts (growth_pct > threshold),
and claim the cooldown + queue the alert in one transaction per alerting webhook. Round 1 is the
cold round (every webhook evaluated); round 2 runs at once after it, as the next round within the
same hour does (alerting webhooks are cooling down and skipped; the trending answers of the same
data generation and as_of are reused, so nothing is computed again). Deliveries are not sent (that is per receiver, bounded by its 10 s timeout).

Also reported: one trending computation's mean time, i.e. what a round would cost if every webhook
computed its own answer (10,000 x that), which sharing avoids.

    .venv/bin/python bench/bench_webhooks.py            # writes bench/out/webhooks.md
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_endpoints import OUT, ensure_data  # noqa: E402
from bench.bench_secret import bench_secret  # noqa: E402
from service.accounts import AccountStore  # noqa: E402
from service.api.tiers import Tier  # noqa: E402
from service.api.windows import TRENDING_WINDOWS, compute_as_of  # noqa: E402
from service.app import privacy_params  # noqa: E402
from service.clock import SystemClock  # noqa: E402
from service.engine.polars import PolarsEngine as Engine  # noqa: E402
from service.engine.requests import TRENDING_DIMENSIONS, TRENDING_METRICS  # noqa: E402
from service.privacy import Privacy  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store.reader import EventStore  # noqa: E402
from service.webhooks.evaluate import TrendingMemo, evaluate, trending_request  # noqa: E402
from service.webhooks.webhook_store import WebhookStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webhooks", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--accounts-url", default="")
    args = parser.parse_args()

    data_dir, info = ensure_data(args.events, 90, 7)
    settings = Settings(data_dir=data_dir, secret=bench_secret())
    engine = Engine(Privacy(settings.secret, privacy_params(settings)))
    started = time.perf_counter()
    frames = EventStore(data_dir).snapshot()
    load_seconds = time.perf_counter() - started

    tmp = tempfile.mkdtemp(prefix="bench-webhooks-")
    url = args.accounts_url or f"sqlite:///{tmp}/accounts.db"
    accounts = AccountStore(url)
    store = WebhookStore(accounts.db_engine, SystemClock())
    rng = random.Random(7)
    started = time.perf_counter()
    subscription_ids = []
    for i in range(args.webhooks // 10):
        accounts.create_key(Tier.OBSERVER, subscription=f"bench-{i}")
    with accounts.db_engine.connect() as c:
        import sqlalchemy as sa

        from service.accounts.tables import subscriptions
        subscription_ids = c.execute(sa.select(subscriptions.c.id)).scalars().all()
    for n in range(args.webhooks):
        store.create(subscription_ids[n // 10], {
            "url": "https://203.0.113.10/hook", "window": rng.choice(TRENDING_WINDOWS),
            "dimension": rng.choice(TRENDING_DIMENSIONS), "metric": rng.choice(TRENDING_METRICS),
            "threshold_pct": float(rng.choice([50, 100, 200, 500, 1000, 2000])), "cooldown_minutes": 60,
            "min_baseline": rng.choice([10.0, 50.0]), "enabled": True, "description": ""})
    create_seconds = time.perf_counter() - started

    now = SystemClock().now()
    rounds = []
    memo = TrendingMemo()  # as the worker keeps it: answers of the same (generation, as_of) are reused
    for _ in range(2):
        started = time.perf_counter()
        report = evaluate(store, engine, frames, now, memo=memo)
        rounds.append((time.perf_counter() - started, report))

    # One computation per webhook, the cost sharing avoids: the mean over the distinct requests.
    as_of = compute_as_of(now, frames.last_event)
    keys = sorted({(w, d, m, b) for w in TRENDING_WINDOWS for d in TRENDING_DIMENSIONS for m in TRENDING_METRICS
                   for b in (10.0, 50.0)})
    started = time.perf_counter()
    for key in keys:
        engine.trending(frames, as_of, trending_request(*key))
    per_computation = (time.perf_counter() - started) / len(keys)

    lines = [
        "# Webhook evaluation round (bench/bench_webhooks.py)",
        "",
        f"Data: {info['events']:,} events over {info['days']} days (bench/out/data-{info['events']}-90-7); "
        f"snapshot load {load_seconds:.1f} s (once per worker, not per round). Accounts: "
        f"{'PostgreSQL' if url.startswith('postgresql') else 'SQLite file'}; {args.webhooks:,} webhooks created "
        f"in {create_seconds:.1f} s.",
        "",
        "| round | webhooks | cooling down | trending computations | computing s | with alerts | queued | total s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, (seconds, r) in enumerate(rounds, start=1):
        lines.append(f"| {i} | {r.webhooks:,} | {r.cooling:,} | {r.computations} | {r.seconds_computing:.2f} | "
                     f"{r.with_alerts:,} | {r.queued:,} | {seconds:.2f} |")
    lines += [
        "",
        f"One trending computation: {per_computation * 1000:.0f} ms on average over the {len(keys)} distinct "
        f"requests; without sharing, a round would compute {args.webhooks:,} of them: about "
        f"{per_computation * args.webhooks:.0f} s.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.accounts_url and args.webhooks == 10_000 and args.events == 10_000_000:
        (OUT / "webhooks.md").write_text(text)
    accounts.close()


if __name__ == "__main__":
    main()
