"""Table definitions of the accounts database: subscriptions and their API keys.

Later tables (webhooks, delivery log) join this one ``metadata`` so that a single
``create_schema`` call creates everything, under one lock.

There is deliberately no ``last_used_at`` column on ``api_keys``: keeping it current would
turn every authenticated request into a write. On SQLite that write takes the database-wide
writer lock shared by all workers; on PostgreSQL it creates a dead row version per request.
Authentication stays read-only, so a slow or busy writer can never delay or fail an API call.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

# Stable constraint names, so a later migration can refer to them on every backend.
metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_name)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UtcDateTime(sa.TypeDecorator[dt.datetime]):
    """An aware UTC datetime on every backend.

    PostgreSQL keeps the zone (``timestamptz``); SQLite would drop it, so values are stored
    there as naive UTC and made aware again on the way out. Naive input is refused rather
    than guessed at.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the accounts database stores aware UTC times only")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


subscriptions = sa.Table(
    "subscriptions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(100), nullable=False, unique=True),
    # The Tier slug. No CHECK constraint: create_all never alters an existing table, so a
    # tier added later would be refused by databases created earlier. The store parses it.
    sa.Column("tier", sa.String(32), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "subscription_id",
        sa.Integer,
        sa.ForeignKey("subscriptions.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("prefix", sa.String(16), nullable=False, index=True),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("expires_at", UtcDateTime, nullable=True),
    sa.Column("revoked_at", UtcDateTime, nullable=True),
    # Authentication looks keys up by hash on every request: this index is that lookup.
    sa.Index("ix_api_keys_key_hash", "key_hash", unique=True),
)
