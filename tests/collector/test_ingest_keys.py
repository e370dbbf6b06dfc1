"""`python -m service keys create --ingest`, listed and revoked; an ingest key is not a subscription key."""

from __future__ import annotations

import pytest

from service.accounts import AccountStore, AuthFailure, IngestPrincipal
from service.accounts import keys as key_format
from service.settings import Settings
from tests.support.collector_events import create_key as create
from tests.support.collector_events import run_keys as run


@pytest.fixture
def settings(collector_settings: Settings) -> Settings:
    return collector_settings


@pytest.fixture
def account_store(collector_accounts: AccountStore) -> AccountStore:
    return collector_accounts


def test_create_ingest_prints_an_ingest_key_last_stored_hashed(settings, account_store: AccountStore, capsys):
    key = create(settings, capsys, "--ingest", "--name", "extension")
    assert key_format.looks_like_ingest_key(key) and not key_format.looks_like_key(key)
    principal = account_store.authenticate_ingest(key)
    assert isinstance(principal, IngestPrincipal) and principal.name == "extension"
    assert account_store.authenticate(key) is AuthFailure.MALFORMED  # reads nothing
    with account_store.db_engine.connect() as connection:
        stored = connection.exec_driver_sql("SELECT key_hash, prefix FROM ingest_keys").all()
    assert stored == [(key_format.hash_key(key), key[:18])]  # the hash, and the display prefix only


def test_ingest_keys_are_listed_and_revoked_by_prefix(settings, account_store: AccountStore, capsys):
    key = create(settings, capsys, "--ingest")
    code, out, _ = run(["keys", "list"], settings, capsys)
    assert code == 0 and any(line.startswith(key[:18]) and "ingest" in line and line.endswith("active")
                             for line in out.splitlines())
    code, out, err = run(["keys", "revoke", key[:15]], settings, capsys)
    assert code == 0, err
    assert "revoked" in out
    assert account_store.authenticate_ingest(key) is AuthFailure.REVOKED
    code, _, err = run(["keys", "revoke", key[:12]], settings, capsys)  # too short a prefix
    assert code == 1 and "not an ingest key" in err


def test_a_subscription_key_is_not_an_ingest_key(settings, account_store: AccountStore, capsys):
    key = create(settings, capsys, "--tier", "professional")
    assert account_store.authenticate_ingest(key) is AuthFailure.MALFORMED


@pytest.mark.parametrize("options", [["--ingest", "--tier", "analyst"], ["--ingest", "--subscription", "acme"],
                                     ["--name", "x", "--tier", "analyst"], []])
def test_ingest_options_do_not_mix_with_subscription_ones(settings, capsys, options):
    code, _out, err = run(["keys", "create", *options], settings, capsys)
    assert code == 2 and err


def test_ingest_keys_on_each_accounts_backend(accounts_url: str):
    store = AccountStore(accounts_url)
    try:
        key, info = store.create_ingest_key("backend")
        assert store.authenticate_ingest(key) == IngestPrincipal(store.authenticate_ingest(key).key_id, "backend",
                                                                 info.prefix)
        assert store.authenticate_ingest("sig_ingest_" + "Z" * 40) is AuthFailure.UNKNOWN
        assert store.revoke_ingest_key(info.prefix).revoked_at is not None
        assert store.authenticate_ingest(key) is AuthFailure.REVOKED
        assert [i.prefix for i in store.list_ingest_keys()] == [info.prefix]
    finally:
        store.close()
