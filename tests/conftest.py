"""Fixtures shared by more than one area: the fixture event store, the default demo data set, an
accounts store with a key per tier, an empty accounts database per backend, the app built with a
fixed clock, a Falcon test client, a Redis for the run, and the session's embedded ClickHouse.

Each area's own fixtures are in its folder's conftest.py (tests/engine/conftest.py: the engine the
engine tests run on, ...); helpers that tests import are in tests/support/."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import falcon.testing
import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from cache import LocalGate
from service.accounts import AccountStore
from service.accounts.tables import metadata
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.engine.polars import PolarsEngine as Engine
from service.privacy import Privacy
from service.settings import Settings
from service.store.reader import EventStore
from tests.support import redis_server
from tests.support.fixture_data import FIXTURE_NOW, write_fixture_store
from tests.support.secret import TEST_SECRET

pytest_plugins = [
    "tests.support.tiers",     # the quick tier's `slow` marker
    "tests.support.postgres",  # postgres_database: the session's PostgreSQL database
]


@pytest.fixture(scope="session")
def fixture_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("fixture-data")
    write_fixture_store(data_dir)
    return data_dir


@pytest.fixture(scope="session")
def default_demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data set a new user sees first (tests.support.default_demo)."""
    from tests.support.default_demo import write_default_demo

    data_dir = tmp_path_factory.mktemp("default-demo")
    write_default_demo(data_dir)
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
    real Redis; tests of privacy (tests/privacy/) build apps with the real stage."""
    return create_app(
        Settings(data_dir=fixture_data_dir, secret=TEST_SECRET),
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


@pytest.fixture(scope="session")
def chdb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's embedded ClickHouse directory (chdb opens one directory per process); each
    test that lands data uses a database of its own in it."""
    return tmp_path_factory.mktemp("chdb")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def accounts_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty accounts database on each backend (the accounts and webhooks tests)."""
    if request.param == "sqlite":
        # A directory that does not exist yet: the store must create it.
        yield f"sqlite:///{(tmp_path / 'accounts' / 'accounts.db').as_posix()}"
        return
    url = request.getfixturevalue("postgres_database")
    yield url
    # The session shares one database: leave it without tables for the next test.
    engine = sa.create_engine(url, poolclass=NullPool)
    metadata.drop_all(engine)
    engine.dispose()
