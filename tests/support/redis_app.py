"""Building the app over a real Redis, with a key prefix of its own."""

from __future__ import annotations

import uuid
from pathlib import Path

import falcon.testing
import redis

import cache
from service.accounts import AccountStore
from service.app import create_app
from service.clock import Clock
from service.engine.polars import PolarsEngine as Engine
from service.privacy import Privacy
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.secret import TEST_SECRET


def redis_test_client(redis_url: str, prefix: str, data_dir: Path, store: EventStore, accounts: AccountStore,
                      clock: Clock) -> tuple[falcon.testing.TestClient, cache.Gate, str]:
    own_prefix = f"{prefix}{uuid.uuid4().hex[:8]}:"
    gate = cache.connect(redis_url, own_prefix)
    app = create_app(Settings(data_dir=data_dir, secret=TEST_SECRET, redis_url=redis_url, redis_prefix=own_prefix),
                     clock=clock, store=store, accounts=accounts, gate=gate,
                     engine=Engine(Privacy.exact()))  # exact numbers: these tests are about caching and limits
    return falcon.testing.TestClient(app), gate, own_prefix


def delete_prefix(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
    finally:
        client.close()
