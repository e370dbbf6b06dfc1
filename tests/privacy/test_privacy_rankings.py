"""On the demo data a new user first sees (the run command's: 1M events over 90 days), the first 50
rows of every ranking are near the truth: at most one a draw of the noise (three secrets) is published
at more than twice its exact value, the exact values computed by DuckDB straight from the store's Parquet files (issue 33: a
small cell's cap, and noise, used to be set by its pilot sum's noise, and rankings were led by it)."""

from __future__ import annotations

import datetime as dt
import uuid

import duckdb
import falcon.testing
import polars as pl
import pytest

from cache import LocalGate
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.default_demo import DEFAULT_DEMO_END
from tests.support.http import get, post_query
from tests.support.secret import TEST_SECRET

ROWS = 50
COUNTS = {"suppressions": "sum(suppressions)", "events": "count(*)", "unique_users": "count(DISTINCT user_id)"}
# (name, request, records field, key field, ordered-by field; exact: table, SQL key, SQL measure)
RANKINGS = [
    ("keyword-activity 30d all", ("/keyword-activity", {"window": "30d", "type": "all"}), "keywords", "keyword",
     "total_events", ("keyword_changes", "keyword", "count(*)")),
    ("keyword-activity 30d added", ("/keyword-activity", {"window": "30d", "type": "added"}), "keywords", "keyword",
     "adds", ("keyword_changes", "keyword", "count(*) FILTER (WHERE action = 'add')")),
    *((f"top-keywords {w}", ("/top-keywords", {"window": w}), "keywords", "keyword_raw", "suppressions",
       ("suppressions", "keyword", COUNTS["suppressions"])) for w in ("24h", "30d")),
    # Over 30 days a city's cap reads its family's mean per user (docs/privacy.md): its ranking too.
    *((f"geo-heat {w} city", ("/geo-heat", {"window": w, "level": "city"}), "regions", "geo_key", "suppressions",
       ("suppressions", "city", COUNTS["suppressions"])) for w in ("7d", "30d")),
    *((f"query {w} by {d} ordered by {m}", {"window": w, "group_by": [d], "order_by": m}, "results",
       "city_id" if d == "city" else d, m, ("suppressions", d, COUNTS[m]))
      for d in ("keyword", "domain", "city") for w in ("24h", "7d", "30d") for m in COUNTS),
]


# The demo's (the tests' secret), and two other secrets: which rows noise lifts is a draw, and
# one draw of a ranking flips between 1 and 2 rows over twice their value, before issue 41 as after
# it (measured over 12 secrets on the 1M benchmark data, /query 24h by keyword ordered by events:
# 23 such rows in all before, at most 4 in one draw; 10 after, at most 2). So the bound is on the
# three draws together: at most 3 rows (one a draw on average), and at most 2 in any one.
SECRETS = (TEST_SECRET, "rankings-second-secret", "rankings-third-secret")


@pytest.fixture(scope="module")
def clients(default_demo_dir, accounts):
    made = []
    for secret in SECRETS:
        settings = Settings(data_dir=default_demo_dir, cache_responses=False, secret=secret)
        made.append(falcon.testing.TestClient(create_app(
            settings, clock=FixedClock(DEFAULT_DEMO_END + dt.timedelta(minutes=20)),
            store=EventStore(default_demo_dir), accounts=accounts, gate=LocalGate())))
    return made


@pytest.fixture(scope="module")
def key(accounts):
    return accounts.create_key(Tier.PROFESSIONAL, subscription=f"rankings-{uuid.uuid4().hex[:8]}")[0]


@pytest.fixture(scope="module")
def exact(default_demo_dir):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for table in ("suppressions", "keyword_changes"):
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{default_demo_dir / table}/*/*.parquet', "
                    "hive_partitioning = true)")

    def values(table: str, key: str, measure: str, window: str) -> dict[str, int]:
        hours = {"24h": 24, "7d": 24 * 7, "30d": 24 * 30}[window]
        end = DEFAULT_DEMO_END.strftime("%Y-%m-%d %H:%M:%S")
        rows = con.sql(f"SELECT {key}::VARCHAR, ({measure})::BIGINT FROM {table} "
                       f"WHERE ts >= TIMESTAMPTZ '{end}+00' - INTERVAL {hours} HOUR AND ts < TIMESTAMPTZ '{end}+00' "
                       f"AND {key} IS NOT NULL GROUP BY 1").fetchall()
        return dict(rows)

    return values


@pytest.mark.parametrize(("name", "request_", "records", "key_field", "ordered_by", "truth"), RANKINGS,
                         ids=[r[0] for r in RANKINGS])
def test_at_most_one_of_the_first_50_rows_is_published_at_more_than_twice_its_exact_value(
        clients, key, exact, name, request_, records, key_field, ordered_by, truth):
    overs = []
    for client in clients:
        if isinstance(request_, dict):
            response = post_query(client, key, {**request_, "limit": ROWS})
            window = request_["window"]
        else:
            path, params = request_
            response = get(client, path, key, {**params, "limit": str(ROWS)} if path != "/geo-heat" else params)
            window = params["window"]
        assert response.status_code == 200, response.text
        rows = response.json[records][:ROWS]
        assert len(rows) == ROWS
        true = exact(*truth, window)
        shown = pl.DataFrame({"key": [str(r[key_field]) for r in rows], "published": [r[ordered_by] for r in rows]})
        checked = shown.with_columns(exact=pl.col("key").replace_strict(true, default=0, return_dtype=pl.Int64))
        overs.append(checked.filter(pl.col("published") > 2 * pl.col("exact")))
    assert sum(over.height for over in overs) <= len(clients), overs
    assert max(over.height for over in overs) <= 2, overs
