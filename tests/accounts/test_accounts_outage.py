"""The accounts database out of reach (issue 21): keys seen recently keep working from their last
known answer for SIGNALS_AUTH_STALE_SECONDS, others get 503, the outage is logged once (not per
request), and once the database is back a key revoked meanwhile stops working.

In process with a store whose database fails on demand, and over the real gunicorn with
PostgreSQL behind a TCP proxy that the test cuts and restores."""

from __future__ import annotations

import logging
import time
import uuid

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from service.accounts import AccountStore, AuthFailure
from service.accounts.cached import AccountsUnavailable, CachedAuthenticator
from service.api.tiers import Tier
from tests.support.fixture_data import write_fixture_store
from tests.support.processes import gunicorn
from tests.support.spec_table import BASE
from tests.support.tcp_proxy import TcpProxy


class Unreachable:
    """An AccountStore whose database can be switched off."""

    def __init__(self, store: AccountStore) -> None:
        self.store, self.down = store, False
        self.clock = store.clock

    def authenticate_refs(self, refs):
        if self.down:
            raise OperationalError("SELECT", {}, ConnectionRefusedError("connection refused"))
        return self.store.authenticate_refs(refs)

    def authenticate(self, presented):
        if self.down:
            raise OperationalError("SELECT", {}, ConnectionRefusedError("connection refused"))
        return self.store.authenticate(presented)


def test_known_keys_work_through_an_outage_for_the_stale_time_only(accounts, caplog):
    now = [0.0]
    db = Unreachable(accounts)
    cached = CachedAuthenticator(db, ttl_seconds=10, stale_seconds=60, timer=lambda: now[0])
    seen, _ = accounts.create_key(Tier.ANALYST, subscription=f"outage-{uuid.uuid4().hex[:8]}")
    unseen, _ = accounts.create_key(Tier.ANALYST, subscription=f"outage-{uuid.uuid4().hex[:8]}")
    assert cached.authenticate(seen).tier is Tier.ANALYST
    db.down = True
    caplog.set_level(logging.INFO, logger="signals.auth")
    for moment in (11.0, 30.0, 59.9):  # past the TTL, within the stale time of the last check (0)
        now[0] = moment
        assert cached.authenticate(seen).tier is Tier.ANALYST
        with pytest.raises(AccountsUnavailable):
            cached.authenticate(unseen)
    now[0] = 60.1
    with pytest.raises(AccountsUnavailable):  # past the stale time: no longer vouched for
        cached.authenticate(seen)
    assert [r.levelname for r in caplog.records] == ["ERROR"]  # one line for the outage, not one per request
    accounts.revoke(seen)
    db.down = False
    now[0] = 61.0
    assert cached.authenticate(seen) is AuthFailure.REVOKED  # back: revocations apply
    assert cached.authenticate(unseen).tier is Tier.ANALYST
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]
    assert "served from last known answers" in caplog.records[1].getMessage()
    assert "3 requests were served" in caplog.records[1].getMessage()


def test_no_stale_answers_without_the_setting(accounts):
    now = [0.0]
    db = Unreachable(accounts)
    cached = CachedAuthenticator(db, ttl_seconds=10, stale_seconds=0, timer=lambda: now[0])
    key, _ = accounts.create_key(Tier.ANALYST, subscription=f"outage-{uuid.uuid4().hex[:8]}")
    cached.authenticate(key)
    db.down, now[0] = True, 10.5
    with pytest.raises(AccountsUnavailable):
        cached.authenticate(key)


@pytest.mark.process
@pytest.mark.postgres
def test_the_real_service_through_a_cut_database(tmp_path, postgres_database):
    url = sa.make_url(postgres_database)
    proxy = TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    through_proxy = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    accounts = AccountStore(postgres_database)
    seen, _ = accounts.create_key(Tier.PROFESSIONAL, subscription=f"cut-{uuid.uuid4().hex[:8]}")
    unseen, _ = accounts.create_key(Tier.PROFESSIONAL, subscription=f"cut-{uuid.uuid4().hex[:8]}")
    data_dir = tmp_path / "data"
    write_fixture_store(data_dir)
    try:
        with gunicorn(data_dir, WEB_CONCURRENCY="1", SIGNALS_ACCOUNTS_URL=through_proxy,
                      SIGNALS_AUTH_CACHE_SECONDS="1", SIGNALS_AUTH_STALE_SECONDS="120") as (base, log), \
                httpx.Client(base_url=base + BASE, timeout=30) as http:
            def call(key: str) -> httpx.Response:
                return http.get("/top-keywords", headers={"Authorization": f"Bearer {key}"})

            assert call(seen).status_code == 200
            proxy.cut()
            time.sleep(1.2)  # past the auth cache's TTL: the database would be asked
            statuses = [(call(seen).status_code, call(unseen).status_code) for _ in range(20)]
            assert statuses == [(200, 503)] * 20, statuses
            proxy.restore()
            accounts.revoke(seen)
            time.sleep(1.2)
            deadline = time.monotonic() + 15  # the pool finds its way back
            while call(unseen).status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert call(unseen).status_code == 200
            assert call(seen).status_code == 401  # revoked during the outage: refused once it is over
        output = log[0]
        assert output.count("accounts database unavailable") == 1, output[-3000:]
        assert output.count("accounts database is back") == 1, output[-3000:]
        assert seen not in output and unseen not in output
    finally:
        proxy.close()
        accounts.close()
