"""Shared fixtures: the fixture event store, an accounts store with a key per tier, the app
built with a fixed clock, a Falcon test client, and a Redis for the run."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path

import falcon.testing
import pytest

from cache import LocalGate
from service.accounts import AccountStore
from service.app import create_app
from service.clock import FixedClock
from service.engine import Engine
from service.privacy import Privacy
from service.settings import Settings
from service.store.reader import EventStore
from service.tiers import Tier
from tests.support import redis_server
from tests.support.fixture_data import FIXTURE_NOW, write_fixture_store

pytest_plugins = ["tests.support.tiers"]  # the quick tier's `slow` marker


@pytest.fixture(scope="session")
def fixture_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("fixture-data")
    write_fixture_store(data_dir)
    return data_dir


# The data set `scripts/run.sh` makes (1,000,000 events over 90 days, seed 7, development secret),
# ending at a fixed hour: what a new user sees first.
DEFAULT_DEMO_END = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)


@pytest.fixture(scope="session")
def default_demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from service.store.demo import generate_demo

    data_dir = tmp_path_factory.mktemp("default-demo")
    generate_demo(data_dir, events=1_000_000, days=90, seed=7, end=DEFAULT_DEMO_END, secret=Settings().secret,
                  progress=False)
    return data_dir


@pytest.fixture(scope="session")
def fixture_store(fixture_data_dir: Path) -> EventStore:
    return EventStore(fixture_data_dir)


@pytest.fixture(scope="session")
def accounts(tmp_path_factory: pytest.TempPathFactory) -> AccountStore:
    store = AccountStore(f"sqlite:///{tmp_path_factory.mktemp('accounts') / 'accounts.db'}")
    yield store
    store.close()


@pytest.fixture
def keys(accounts: AccountStore) -> dict[str, str]:
    """One key per tier, by tier slug, each on a subscription of its own (a fresh rate-limit window)."""
    run = uuid.uuid4().hex[:8]
    return {tier.slug: accounts.create_key(tier, subscription=f"test-{tier.slug}-{run}")[0] for tier in Tier}


@pytest.fixture
def app(fixture_data_dir: Path, fixture_store: EventStore, accounts: AccountStore) -> falcon.App:
    """The app on the fixture data with a fixed clock, a fresh in-process gate (cache and limits),
    so functional tests do not share rate-limit windows or cached bodies, and the exact privacy
    stage, so they can check the fixture's known aggregates. Tests of the gate build apps on the
    real Redis; tests of privacy (test_privacy*.py) build apps with the real stage."""
    return create_app(
        Settings(data_dir=fixture_data_dir),
        clock=FixedClock(FIXTURE_NOW),
        store=fixture_store,
        accounts=accounts,
        gate=LocalGate(),
        engine=Engine(Privacy.exact()),
    )


@pytest.fixture
def client(app: falcon.App) -> falcon.testing.TestClient:
    return falcon.testing.TestClient(app)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis for this run: SIGNALS_TEST_REDIS_URL, the local one, or a throwaway redis-server."""
    configured = os.environ.get("SIGNALS_TEST_REDIS_URL")
    if configured:
        if not redis_server.answers(configured):
            pytest.fail(f"SIGNALS_TEST_REDIS_URL={configured} does not answer PING")
        yield configured
        return
    local = "redis://127.0.0.1:6379/0"
    if redis_server.answers(local):
        yield local
        return
    try:
        server = redis_server.ThrowawayRedis().start()
    except RuntimeError as exc:
        pytest.fail(f"No Redis for the tests: nothing answers on 127.0.0.1:6379 and a throwaway "
                    f"redis-server could not be started ({exc}). Install redis-server or set SIGNALS_TEST_REDIS_URL.")
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_prefix() -> str:
    """A key prefix unique to this test run."""
    return redis_server.run_prefix()


@pytest.fixture
def rclient(redis_url, redis_prefix, fixture_data_dir, fixture_store, accounts):
    """A test client for the app on the fixture data over the real Redis, with its own key prefix."""
    from tests.support.redis_app import delete_prefix, redis_test_client

    client, gate, prefix = redis_test_client(redis_url, redis_prefix, fixture_data_dir, fixture_store, accounts,
                                             FixedClock(FIXTURE_NOW))
    yield client
    gate.close()
    delete_prefix(redis_url, prefix)
