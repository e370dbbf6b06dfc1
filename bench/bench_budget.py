"""What legitimate use and the issue-41 attacks cost a subscription's privacy budget.

Runs the web application in process (falcon's test client, the in-process gate, every answer
computed once and cached as in production) on the demo data of bench_endpoints.py, with one
Professional key and an unlimited budget, and reads each answer's charge from its
`Signals-Privacy-Budget` header (`charged`: what it added; 0 for an answer already charged).

Workloads (issue 41, point 4):

- **sheet**: a spreadsheet of 16 reports refreshed every hour for 30 days. Charged for 8 of its
  720 hours (one every 90 hours), scaled to 720.
- **dashboard**: a session of 200 page views, each the page's request with the window and
  subject a visitor picks (seeded choices among the pages' controls; repeats are free).
- **analyst**: a day of 120 distinct `/query` requests (group by one or two dimensions, filters,
  windows).

Attacks (issue 41, points 1-3), charged the same way: 30 padded copies of a city (cloning), the
differencing of one town's hours over 32 real subsets (64 requests), and 25 windows an hour apart.

    .venv/bin/python bench/bench_budget.py [--events 1000000] [--days 90] [--seed 7]

Prints a Markdown table (epsilon; the default SIGNALS_PRIVACY_BUDGET beside it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_endpoints import ensure_data  # noqa: E402
from bench_secret import bench_secret  # noqa: E402

SHEET = [
    ("top-keywords", {"window": "24h", "limit": "50"}),
    ("top-keywords", {"window": "7d", "limit": "25"}),
    ("top-keywords", {"window": "30d", "limit": "100"}),
    ("keyword-timeseries", {"keyword": "climate change", "window": "30d", "bucket": "day"}),
    ("keyword-timeseries", {"keyword": "crypto", "window": "7d", "bucket": "hour"}),
    ("domain-timeseries", {"domain": "reddit.com", "window": "7d", "bucket": "day"}),
    ("domain-timeseries", {"domain": "youtube.com", "window": "30d", "bucket": "day"}),
    ("geo-heat", {"window": "24h", "level": "country"}),
    ("geo-heat", {"window": "7d", "level": "region"}),
    ("geo-heat", {"window": "30d", "level": "city"}),
    ("trending", {"window": "24h", "dimension": "keyword", "metric": "suppressions"}),
    ("trending", {"window": "7d", "dimension": "domain", "metric": "unique_users"}),
    ("keyword-activity", {"window": "7d", "type": "added"}),
    ("query", {"window": "7d", "group_by": ["region"], "filters": {"countries": ["US"]}}),
    ("query", {"window": "30d", "group_by": ["platform", "page_context"]}),
    ("query", {"window": "7d", "group_by": ["time"], "bucket": "day", "filters": {"keywords": ["crypto"]}}),
]
PAGES = [
    ("top-keywords", lambda w, s: {"window": w, "limit": "50"}),
    ("keyword-timeseries", lambda w, s: {"keyword": s, "window": w if w != "24h" else "24h", "bucket": "day" if w in ("30d", "90d") else "hour"}),
    ("domain-timeseries", lambda w, s: {"domain": {"climate change": "reddit.com", "crypto": "youtube.com", "elections": "x.com"}[s], "window": w, "bucket": "day"}),
    ("geo-heat", lambda w, s: {"window": w, "level": "country"}),
    ("geo-heat", lambda w, s: {"window": w, "level": "region"}),
    ("trending", lambda w, s: {"window": w, "dimension": "keyword", "metric": "suppressions"}),
    ("keyword-activity", lambda w, s: {"window": w, "type": "added"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    data_dir, _info = ensure_data(args.events, args.days, args.seed)
    work = Path(tempfile.mkdtemp(prefix="bench-budget-"))
    os.environ.update({"SIGNALS_DATA_DIR": str(data_dir), "SIGNALS_ACCOUNTS_URL": f"sqlite:///{work}/accounts.db",
                       "SIGNALS_RUN_DIR": str(work / "run"), "SIGNALS_PRIVACY_BUDGET": "1e12"})
    os.environ.pop("REDIS_URL", None)
    bench_secret()
    from falcon import testing

    from service.accounts import AccountStore
    from service.api.tiers import Tier
    from service.app import create_app
    from service.settings import PRIVACY_BUDGET, Settings

    settings = Settings.from_env()
    accounts = AccountStore(settings.accounts_url)
    client = testing.TestClient(create_app(settings, accounts=accounts))

    def key() -> dict[str, str]:
        return {"Authorization": f"Bearer {accounts.create_key(Tier.PROFESSIONAL)[0]}"}

    def ask(headers: dict[str, str], endpoint: str, params: dict, as_of: dt.datetime | None = None) -> float:
        path = f"/api/v1/signals/{endpoint}"
        if endpoint == "query":
            body = dict(params, **({"as_of": as_of.strftime("%Y-%m-%dT%H:00:00Z")} if as_of else {}))
            result = client.simulate_post(path, json=body, headers=headers)
        else:
            query = dict(params, **({"as_of": as_of.strftime("%Y-%m-%dT%H:00:00Z")} if as_of else {}))
            result = client.simulate_get(path, params=query, headers=headers)
        if result.status_code != 200:
            raise SystemExit(f"{endpoint} {params}: {result.status_code} {result.text[:300]}")
        fields = dict(part.strip().split("=", 1) for part in result.headers["signals-privacy-budget"].split(","))
        return float(fields["charged"])

    first = client.simulate_get("/api/v1/signals/top-keywords", headers=key()).headers["x-signals-as-of"]
    latest = dt.datetime.fromisoformat(first.replace("Z", "+00:00"))
    rows = []

    headers = key()
    hours = [latest - dt.timedelta(hours=90 * i) for i in range(8)]
    per_refresh = [sum(ask(headers, e, p, hour) for e, p in SHEET) for hour in hours]
    mean = sum(per_refresh) / len(per_refresh)
    rows.append(("sheet: 16 reports every hour for 30 days (8 hours charged, x 90)", 720 * 16, mean * 720))

    headers, rng = key(), random.Random(args.seed)
    total = 0.0
    for _ in range(200):
        endpoint, make = rng.choice(PAGES)
        total += ask(headers, endpoint, make(rng.choice(["24h", "7d", "30d"]), rng.choice(["climate change", "crypto", "elections"])))
    rows.append(("dashboard: a session of 200 page views", 200, total))

    headers, total = key(), 0.0
    dims = ["country", "region", "platform", "page_context", "keyword", "domain"]
    asked: set[str] = set()
    while len(asked) < 120:
        group = rng.sample(dims, rng.choice([1, 2]))
        body: dict = {"window": rng.choice(["24h", "7d", "30d"]), "group_by": group}
        if rng.random() < 0.5:
            body["filters"] = {"countries": [rng.choice(["US", "DE", "FR", "GB", "BR", "IN", "JP"])]}
        text = json.dumps(body, sort_keys=True)
        if text in asked:
            continue
        asked.add(text)
        total += ask(headers, "query", body)
    rows.append(("analyst: a day of 120 distinct /query requests", 120, total))

    print(f"| workload | requests | epsilon charged | of the default budget ({PRIVACY_BUDGET:,.0f} a month) |")
    print("|---|---:|---:|---:|")
    for name, requests, charged in rows:
        print(f"| {name} | {requests:,} | {charged:,.0f} | {100 * charged / PRIVACY_BUDGET:.1f} % |")


if __name__ == "__main__":
    main()
