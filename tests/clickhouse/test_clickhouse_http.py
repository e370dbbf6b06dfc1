"""Same files, same answers: the same data landed with the same commands in the Parquet store
(polars engine) and in ClickHouse (chdb) give byte-identical bodies on every endpoint, JSON and
CSV, with the same secret and the real privacy stage (noise, caps, suppression)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import falcon.testing
import pytest

from cache import LocalGate
from service.api.endpoints import ENDPOINTS
from service.api.tiers import Tier
from service.app import create_app
from service.clickhouse.landing import ClickHouseTarget
from service.clickhouse.store import ClickHouseStore
from service.clock import FixedClock
from service.demo.generate import generate_demo
from service.settings import Settings
from service.store.ingest import ingest_files
from service.store.reader import EventStore
from tests.support.engines import fresh_database

SECRET = "same-files-same-answers"
DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
NOW = DEMO_END + dt.timedelta(minutes=20)


def _event_files(directory: Path) -> list[list[Path]]:
    """Two ingest calls' worth of files (NDJSON with a bad row, CSV): later generations for some dates."""
    first = directory / "late-suppressions.ndjson"
    lines = []
    for i in range(400):
        ts = DEMO_END - dt.timedelta(hours=1 + i % 30, minutes=i % 60)
        lines.append(json.dumps({
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "user_id": f"late-{i % 37}", "keyword": f"late keyword {i % 5}",
            "domain": "news.example.com", "platform": "firefox", "page_context": "feed", "country": "US",
            "region": "US-CA", "county": "06037", "city": "5368361", "suppressions": 1 + i % 4}))
    lines.append('{"ts": "not a time", "user_id": "x"}')  # quarantined
    first.write_text("\n".join(lines) + "\n")
    second = directory / "late-changes.csv"
    rows = ["ts,user_id,keyword,action,platform,country"]
    for i in range(300):
        ts = DEMO_END - dt.timedelta(hours=2 + i % 20, minutes=i % 50)
        rows.append(f"{ts.strftime('%Y-%m-%dT%H:%M:%SZ')},late-{i % 29},late keyword {i % 3},"
                    f"{('add', 'remove', 'edit')[i % 3]},chrome,DE")
    second.write_text("\n".join(rows) + "\n")
    return [[first], [second]]


def _land_everything(data_dir: Path, files: list[list[Path]], target=None) -> None:
    generate_demo(data_dir, events=60_000, days=30, seed=5, end=DEMO_END, secret=SECRET, progress=False,
                  target=target)
    for call in files:
        ingest_files(data_dir, call, secret=SECRET, now=NOW, progress=False, target=target)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, chdb_dir):
    sources = tmp_path_factory.mktemp("same-files")
    files = _event_files(sources)
    parquet_dir = tmp_path_factory.mktemp("parquet-store")
    _land_everything(parquet_dir, files)
    clickhouse_dir = tmp_path_factory.mktemp("clickhouse-side")
    ch = fresh_database(chdb_dir, "http")
    _land_everything(clickhouse_dir, files, ClickHouseTarget(ch, clickhouse_dir))
    return {"polars": (parquet_dir, EventStore(parquet_dir)), "clickhouse": (clickhouse_dir, ClickHouseStore(ch))}


def make_client(kind: str, stores, accounts, chdb_dir, **settings) -> falcon.testing.TestClient:
    data_dir, store = stores[kind]
    settings = {"cache_responses": False, **settings}
    configured = Settings(data_dir=data_dir, secret=SECRET, privacy_min_users=3, engine=kind,
                          clickhouse_url=f"chdb://{chdb_dir}", **settings)
    # The app builds the engine the settings name (service/backend.py); the store is the test's.
    return falcon.testing.TestClient(create_app(configured, clock=FixedClock(NOW), store=store, accounts=accounts,
                                                gate=LocalGate()))


@pytest.fixture(scope="module")
def clients(stores, accounts, chdb_dir):
    return {kind: make_client(kind, stores, accounts, chdb_dir) for kind in stores}


# Each endpoint's requests (REQUESTS): the table's example (service/api/endpoints.py), then these.
VARIANTS = {
    "top_keywords": [{"window": w, "limit": 20} for w in ("1h", "6h", "24h", "7d", "30d")],
    "keyword_timeseries": [{"keyword": k, "window": w, "bucket": b}
                           for k in ("late keyword 1", "Late  Keyword 2") for w, b in (("24h", "hour"), ("7d", "day"), ("30d", "week"))],
    "domain_timeseries": [{"domain": d, "window": w, "bucket": b}
                          for d in ("reddit.com", "https://www.news.example.com/x") for w, b in (("24h", "hour"), ("30d", "day"))],
    "geo_heat": [{"window": w, "level": level} for w in ("24h", "30d") for level in ("country", "region", "county", "city")],
    "trending": [{"window": w, "dimension": d, "metric": m, "min_baseline": 0}
                 for w in ("24h", "7d", "30d") for d in ("keyword", "domain", "platform") for m in
                 ("suppressions", "events", "unique_users")],
    "keyword_activity": [{"window": w, "type": t} for w in ("24h", "30d") for t in ("all", "added", "removed", "edited")],
}
VARIANTS["query"] = [
    {"window": "30d"},
    {"window": "24h", "group_by": ["keyword"], "limit": 50},
    {"window": "7d", "group_by": ["country", "time"], "bucket": "day", "format": "csv"},
    {"window": "30d", "group_by": ["city", "platform"], "order_by": "unique_users", "order": "asc", "limit": 30},
    {"window": "7d", "filters": {"countries": ["US"], "platforms": ["firefox", "chrome"]},
     "group_by": ["region", "county", "time"], "bucket": "week", "format": "csv"},
    {"window": "90d", "filters": {"keywords": ["late keyword 0", "late keyword 3"]}, "group_by": ["keyword", "domain"]},
    {"window": "24h", "filters": {"domains": ["nothing.example"]}},
    {"window": "30d", "group_by": ["keyword", "domain", "page_context", "time"], "bucket": "hour", "format": "csv"},
    # Places over more than a week are in a family; filtered on the place, the engine computes it beside.
    {"window": "30d", "filters": {"countries": ["US"]}},
    {"window": "90d", "filters": {"countries": ["US", "DE"], "platforms": ["firefox", "chrome"]}, "group_by": ["country"]},
    # One meaning, one noise (privacy/meaning.py): junk values and every platform dropped alike.
    {"window": "30d", "filters": {"countries": ["US", "ZZ"], "regions": ["US-CA", "XX-1"],
                                  "platforms": ["chrome", "firefox", "safari", "edge", "ios", "android", "other"]},
     "group_by": ["platform"]},
    {"window": "7d", "filters": {"cities": ["no such city"]}},
]
REQUESTS = {endpoint.name: [dict(endpoint.example), *VARIANTS.get(endpoint.name, [])] for endpoint in ENDPOINTS}


def _get(client, key: str, path: str, params: dict):
    return client.simulate_get(path, params=params, headers={"Authorization": f"Bearer {key}"})


def _same(responses) -> bytes:
    polars_response, clickhouse_response = responses
    assert polars_response.status_code == clickhouse_response.status_code
    assert polars_response.headers.get("content-type") == clickhouse_response.headers.get("content-type")
    assert polars_response.content == clickhouse_response.content
    return polars_response.content


def test_every_endpoint_answers_byte_for_byte_alike(clients, accounts) -> None:
    key = accounts.create_key(Tier.PROFESSIONAL, subscription="same-answers")[0]
    shown = 0
    for endpoint in ENDPOINTS:
        for arguments in REQUESTS[endpoint.name]:
            if endpoint.in_body:
                content = _same([clients[kind].simulate_post(endpoint.full_path, json=arguments,
                                                             headers={"Authorization": f"Bearer {key}"})
                                 for kind in ("polars", "clickhouse")])
                shown += content.count(b"\n") > 1 or f'"{endpoint.records_field}":[{{'.encode() in content
            else:
                params = {name: str(value) for name, value in arguments.items()}
                body = _same([_get(clients[kind], key, endpoint.full_path, params) for kind in ("polars", "clickhouse")])
                shown += bool(json.loads(body)[endpoint.records_field])
    # Most answers hold published numbers (not only empty lists): the comparison compares something.
    assert shown >= 50


def test_the_cost_guard_refuses_alike(stores, accounts, chdb_dir) -> None:
    key = accounts.create_key(Tier.PROFESSIONAL, subscription="same-refusal")[0]
    body = {"window": "30d", "group_by": ["keyword", "city", "domain", "time"], "bucket": "hour"}
    answers = [make_client(kind, stores, accounts, chdb_dir, query_max_cells=500).simulate_post(
        "/api/v1/signals/query", json=body, headers={"Authorization": f"Bearer {key}"}) for kind in stores]
    assert [a.status_code for a in answers] == [422, 422]
    first, second = (json.loads(a.content) for a in answers)
    assert first.pop("request_id") != second.pop("request_id")
    assert first == second
    assert first["narrowings"] and first["estimated_cells"] > 500


def test_webhook_alerts_are_the_same(stores) -> None:
    """The worker's evaluator (service/webhooks/evaluate.py) on either engine queues the same payloads."""
    from types import SimpleNamespace

    from service.app import privacy_params
    from service.backend import choose
    from service.privacy import Privacy
    from service.webhooks.evaluate import evaluate

    hooks = [SimpleNamespace(id=f"wh_{i}", window=w, dimension=d, metric=m, min_baseline=0, threshold_pct=t,
                             cooldown_until=None)
             for i, (w, d, m, t) in enumerate([("24h", "keyword", "suppressions", 0.0), ("7d", "domain", "events", 10.0),
                                               ("30d", "platform", "unique_users", -50.0)])]

    class Outbox:
        def __init__(self) -> None:
            self.payloads: list[str] = []

        def claim_cooldowns_and_enqueue(self, claims, event, now) -> int:
            self.payloads += [payload_for("id") for _hook, payload_for in claims]
            return len(claims)

    queued = {}
    for kind, (data_dir, store) in stores.items():
        settings = Settings(data_dir=data_dir, secret=SECRET, privacy_min_users=3, engine=kind,
                            clickhouse_url="chdb://unused")
        outbox = Outbox()
        evaluate(outbox, choose(settings).engine(Privacy(SECRET, privacy_params(settings))), store.snapshot(), NOW,
                 hooks=hooks)
        queued[kind] = outbox.payloads
    assert queued["polars"] == queued["clickhouse"]
    assert len(queued["polars"]) >= 2


def test_answers_are_cached_per_generation(stores, accounts, chdb_dir) -> None:
    key = accounts.create_key(Tier.PROFESSIONAL, subscription="cached")[0]
    client = make_client("clickhouse", stores, accounts, chdb_dir, cache_responses=True)
    first, second = (_get(client, key, "/api/v1/signals/top-keywords", {"window": "7d"}) for _ in range(2))
    assert (first.headers["x-cache"], second.headers["x-cache"]) == ("miss", "hit")
    assert first.content == second.content
    assert first.headers["x-signals-data-generation"] == "3"  # the demo, then two ingest calls


# as_of, compare=previous_period and intervals=true (issue 25) on both engines: the previous
# period and the intervals come from the same cells, so the bodies are byte-identical too.
HISTORY_GETS = {
    "top_keywords": [{"window": "24h", "limit": 20, "compare": "previous_period", "intervals": "true"},
                     {"window": "7d", "as_of": "2026-03-09T12:00:00Z", "compare": "previous_period"}],
    "keyword_timeseries": [{"keyword": "late keyword 1", "window": "24h", "bucket": "hour",
                            "compare": "previous_period", "intervals": "true"}],
    "domain_timeseries": [{"domain": "reddit.com", "window": "7d", "bucket": "day", "intervals": "true"}],
    "geo_heat": [{"window": "24h", "level": "region", "compare": "previous_period", "intervals": "true"}],
    "keyword_activity": [{"window": "24h", "type": "all", "compare": "previous_period", "intervals": "true"}],
    "trending": [{"window": "7d", "dimension": "keyword", "min_baseline": 0, "as_of": "2026-03-09T00:00:00Z"}],
}
HISTORY_QUERIES = [
    {"window": "24h", "group_by": ["keyword"], "limit": 50, "compare": "previous_period", "intervals": True},
    {"window": "7d", "group_by": ["country", "time"], "bucket": "day", "format": "csv", "compare": "previous_period",
     "intervals": True, "as_of": "2026-03-09T12:00:00Z"},
]


def test_as_of_compare_and_intervals_answer_byte_for_byte_alike(clients, accounts) -> None:
    key = accounts.create_key(Tier.PROFESSIONAL, subscription="same-history")[0]
    paths = {endpoint.name: endpoint.full_path for endpoint in ENDPOINTS}
    compared = 0
    for name, variants in HISTORY_GETS.items():
        for params in variants:
            responses = [_get(clients[kind], key, paths[name], params) for kind in ("polars", "clickhouse")]
            assert responses[0].status_code == 200, responses[0].text
            body = _same(responses)
            compared += b'"previous"' in body or b'"intervals"' in body
    for body in HISTORY_QUERIES:
        responses = [clients[kind].simulate_post(paths["query"], json=body, headers={"Authorization": f"Bearer {key}"})
                     for kind in ("polars", "clickhouse")]
        assert responses[0].status_code == 200, responses[0].text
        content = _same(responses)
        compared += b"previous" in content
    assert compared >= 7
