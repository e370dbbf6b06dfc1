"""The event collector (service/collector/): bodies checked by the ingest contract, the app's
answers (every status), the durable log, the lander's exactly-once landing, `data count`, the
sender, and the Procfile's collector and lander as real processes (kill -9 among them). Events and
helpers: tests/support/collector_events.py."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from falcon import testing

from service.accounts import AccountStore
from service.api.tiers import Tier
from service.settings import Settings
from tests.support.collector_events import SECRET, make_client


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


@pytest.fixture(autouse=True)
def _close_collector_apps() -> Iterable[None]:
    """The broker's and Redis's connections of the collector apps a test made (no unclosed sockets)."""
    yield
    from service.collector.app import close_all

    close_all()


@pytest.fixture
def collector(collector_settings: Settings, collector_accounts: AccountStore) -> testing.TestClient:
    return make_client(collector_settings, collector_accounts)
