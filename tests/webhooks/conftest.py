"""Webhooks: the management API and the alert worker, on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.accounts import AccountStore


@pytest.fixture
def accounts(accounts_url: str) -> Iterator[AccountStore]:
    """An accounts store of the test's own on each backend (instead of the session's SQLite one)."""
    store = AccountStore(accounts_url)
    yield store
    store.close()
