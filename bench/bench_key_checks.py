"""What checking API keys again costs: one query per key against one query for a batch
(`AccountStore.authenticate_digests`, used by the per-worker key cache, service/accounts/cached.py).

    .venv/bin/python bench/bench_key_checks.py [--postgres postgresql+psycopg://postgres@127.0.0.1:5432/test]

SQLite in a temporary file always; PostgreSQL too when --postgres is given (its tables are made
in a new database, dropped afterwards). Best of 5 for each batch size.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.accounts import AccountStore, hash_key  # noqa: E402
from service.api.tiers import Tier  # noqa: E402

SIZES = (1, 16, 64, 256)


def measure(url: str, label: str) -> None:
    store = AccountStore(url)
    try:
        digests = [hash_key(store.create_key(Tier.PROFESSIONAL)[0]) for _ in range(max(SIZES))]
        store.authenticate_digests(digests)  # warm the pool and the statement cache
        for size in SIZES:
            best = min(_timed(store, digests[:size]) for _ in range(5))
            print(f"| {label} | {size} | {best * 1e3:.2f} | {best / size * 1e6:.1f} |")
    finally:
        store.close()


def _timed(store: AccountStore, digests: list[str]) -> float:
    started = time.perf_counter()
    store.authenticate_digests(digests)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", default="", help="a PostgreSQL server URL to measure as well")
    args = parser.parse_args()
    print("| database | keys in the query | ms per query | µs per key |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        measure(f"sqlite:///{folder}/accounts.db", "SQLite")
    if args.postgres:
        server = sa.make_url(args.postgres)
        admin = sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        name = f"signals_bench_{secrets.token_hex(4)}"
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            measure(server.set(database=name).render_as_string(hide_password=False), "PostgreSQL")
        finally:
            with admin.connect() as connection:
                connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}"')
            admin.dispose()


if __name__ == "__main__":
    main()
