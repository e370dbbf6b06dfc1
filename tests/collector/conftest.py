"""The event collector (service/collector/): bodies checked by the ingest contract, the app's
answers (every status), the durable log, the lander's exactly-once landing, `data count`, the
sender, and the Procfile's collector and lander as real processes (kill -9 among them)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from falcon import testing

from service.accounts import AccountStore
from service.collector.app import create_collector_app
from service.settings import Settings
from service.tiers import Tier

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
SECRET = "collector-test-secret"


def ts(hours_ago: float = 1.0) -> str:
    return (NOW - dt.timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def suppression(event_id: str | None = "s1", **fields: Any) -> dict[str, Any]:
    event = {"event_id": event_id, "type": "suppression", "ts": ts(), "user_id": "user-1", "keyword": "Crypto",
             "domain": "old.reddit.com", "platform": "chrome", "page_context": "feed", "country": "US",
             "region": "US-CA", "county": "06037", "suppressions": 2}
    event.update(fields)
    return {k: v for k, v in event.items() if not (k == "event_id" and v is None)}


def keyword_change(event_id: str = "k1", **fields: Any) -> dict[str, Any]:
    event = {"event_id": event_id, "type": "keyword_change", "ts": ts(), "user_id": "user-1", "keyword": "crypto",
             "action": "add", "platform": "firefox", "country": "DE"}
    event.update(fields)
    return event


def ndjson(events: Iterable[dict[str, Any] | str]) -> bytes:
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events).encode()


def many(count: int, prefix: str = "e", start: int = 0) -> list[dict[str, Any]]:
    return [suppression(f"{prefix}{i}", user_id=f"u{i % 50}", keyword=f"kw{i % 7}")
            for i in range(start, start + count)]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def collector_settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, secret=SECRET, collector_requests_per_minute=1000, metrics_port=0)


@pytest.fixture
def collector_accounts(collector_settings: Settings) -> Iterable[AccountStore]:
    store = AccountStore(collector_settings.accounts_url)
    yield store
    store.close()


@pytest.fixture
def ingest_key(collector_accounts: AccountStore) -> str:
    return collector_accounts.create_ingest_key("tests")[0]


@pytest.fixture
def subscription_key(collector_accounts: AccountStore) -> str:
    return collector_accounts.create_key(Tier.PROFESSIONAL)[0]


def make_client(settings: Settings, accounts: AccountStore) -> testing.TestClient:
    return testing.TestClient(create_collector_app(settings, accounts=accounts))


@pytest.fixture
def collector(collector_settings: Settings, collector_accounts: AccountStore) -> testing.TestClient:
    return make_client(collector_settings, collector_accounts)


def post(client: testing.TestClient, key: str | None, body: bytes, **headers: str) -> testing.Result:
    sent = {"Content-Type": "application/x-ndjson", **headers}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    return client.simulate_post("/api/v1/events", body=body, headers=sent)
