"""The accounts database: the SQLAlchemy engine for SQLite or PostgreSQL (`make_engine`, with a
pool suited to each) and the creation of its tables (`create_schema`, safe when several workers
start at once).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from service.accounts.tables import metadata

# How long a SQLite connection waits for another process's write lock before giving up.
SQLITE_BUSY_TIMEOUT_MS = 5000
POSTGRES_CONNECT_TIMEOUT_S = 5
# Any fixed 64-bit number; only schema creation in this database takes this advisory lock.
_SCHEMA_LOCK_KEY = int.from_bytes(b"signals", "big")


def make_engine(url: str) -> Engine:
    """An engine with a pool suited to the backend.

    SQLite file: QueuePool (SQLAlchemy's default for files), WAL so readers never wait for a
    writer, and a busy timeout so worker processes sharing the file queue for the write lock
    instead of failing. ``sqlite://`` (memory): one shared connection, for tools and trials.
    PostgreSQL: a small QueuePool per process with pre-ping, so a restarted server costs
    one retried checkout rather than a failed request.
    """
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    options: dict[str, Any] = {}
    if backend == "sqlite":
        database = parsed.database or ""
        in_memory = database in ("", ":memory:") or "mode=memory" in database
        if in_memory:
            options.update(poolclass=sa.pool.StaticPool, connect_args={"check_same_thread": False})
        elif not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(parsed, **options)
        event.listen(engine, "connect", _configure_sqlite_connection)
        return engine
    if backend == "postgresql":
        options.update(pool_size=5, max_overflow=10, pool_pre_ping=True)
        if "connect_timeout" not in parsed.query:
            options["connect_args"] = {"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S}
    return sa.create_engine(parsed, **options)


def _configure_sqlite_connection(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        # The busy timeout first: switching to WAL itself needs the lock another worker may hold.
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def create_schema(engine: Engine) -> None:
    """Create missing tables; safe when several workers start at the same moment.

    ``create_all`` checks for each table and then creates it, so two processes can both see
    "missing" and the second CREATE fails. Both backends have transactional DDL, so the check
    and the creation run in one transaction behind a lock: the first process creates, the
    others wait and then find the tables.
    """
    backend = engine.dialect.name
    if backend == "postgresql":
        with engine.begin() as connection:
            # Advisory locks are per database, and the _xact_ form is released at commit.
            connection.execute(sa.select(sa.func.pg_advisory_xact_lock(_SCHEMA_LOCK_KEY)))
            metadata.create_all(connection)
    elif backend == "sqlite":
        # The sqlite3 module never opens a transaction for DDL, so take the write lock
        # ourselves; BEGIN IMMEDIATE waits (busy timeout) while another worker holds it.
        with engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                metadata.create_all(connection)
            except BaseException:
                connection.exec_driver_sql("ROLLBACK")
                raise
            connection.exec_driver_sql("COMMIT")
    else:
        metadata.create_all(engine)
