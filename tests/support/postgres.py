"""The PostgreSQL database of a test session: created on the server at SIGNALS_TEST_POSTGRES_URL
(default the local `test` database's server) and dropped after it. When the server cannot be
reached the tests that need it fail, unless SIGNALS_TEST_SKIP_POSTGRES=1 asks to skip them."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

POSTGRES_URL = os.environ.get("SIGNALS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """URL of a database created for this test session (and dropped after it)."""
    if os.environ.get("SIGNALS_TEST_SKIP_POSTGRES") == "1":
        pytest.skip("SIGNALS_TEST_SKIP_POSTGRES=1: PostgreSQL tests skipped")
    server = sa.make_url(POSTGRES_URL)
    admin = sa.create_engine(
        server, isolation_level="AUTOCOMMIT", poolclass=NullPool, connect_args={"connect_timeout": 3}
    )
    name = f"signals_test_{secrets.token_hex(6)}"
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except sa.exc.OperationalError as error:
        admin.dispose()
        pytest.fail(
            f"PostgreSQL is not reachable at {server.render_as_string(hide_password=True)}: {error.orig}\n"
            "Start it, point SIGNALS_TEST_POSTGRES_URL at a server, "
            "or set SIGNALS_TEST_SKIP_POSTGRES=1 to skip the PostgreSQL tests.",
            pytrace=False,
        )
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}"')
        admin.dispose()
