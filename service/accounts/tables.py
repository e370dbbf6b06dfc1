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


# Ingest keys (the event collector, service/collector/): they post events and read nothing, so they
# belong to no subscription and have no plan. Stored hashed, like api_keys.
ingest_keys = sa.Table(
    "ingest_keys",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("prefix", sa.String(20), nullable=False, index=True),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("revoked_at", UtcDateTime, nullable=True),
    sa.Index("ix_ingest_keys_key_hash", "key_hash", unique=True),
)

# -- webhooks (service/webhooks/): subscriptions' trending alerts, the delivery outbox, the attempt log

webhooks = sa.Table(
    "webhooks",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),  # "wh_" + random: ids are not guessable or countable
    sa.Column(
        "subscription_id",
        sa.Integer,
        sa.ForeignKey("subscriptions.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("url", sa.String(2048), nullable=False),
    sa.Column("window", sa.String(8), nullable=False),
    sa.Column("dimension", sa.String(32), nullable=False),
    sa.Column("metric", sa.String(32), nullable=False),
    sa.Column("threshold_pct", sa.Float, nullable=False),
    sa.Column("cooldown_minutes", sa.Integer, nullable=False),
    sa.Column("min_baseline", sa.Float, nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("description", sa.String(500), nullable=False),
    sa.Column("secret", sa.String(100), nullable=False),  # whsec_...: needed to sign, so not hashed
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    # The cooldown claim: set by one conditional UPDATE (atomic on both backends, any number of workers).
    sa.Column("cooldown_until", UtcDateTime, nullable=True),
    sa.Column("disabled_reason", sa.String(200), nullable=True),
)

# The outbox: one row per message (its id is the webhook-id header, stable across retries).
webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),  # "msg_" + random
    sa.Column("webhook_id", sa.String(40), sa.ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("event", sa.String(32), nullable=False),
    sa.Column("payload", sa.Text, nullable=False),  # the exact body signed and sent
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # pending | succeeded | failed
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", UtcDateTime, nullable=True),
    # The claim: a worker owns the row until lease_until; a worker that dies lets the lease run out.
    sa.Column("lease_until", UtcDateTime, nullable=True),
    sa.Column("leased_by", sa.String(40), nullable=True),
    sa.Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
)

# One row per attempt: what GET /account/webhooks/{id}/deliveries lists.
webhook_attempts = sa.Table(
    "webhook_attempts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("delivery_id", sa.String(40), sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("webhook_id", sa.String(40), sa.ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("started_at", UtcDateTime, nullable=False),
    sa.Column("duration_ms", sa.Integer, nullable=False),
    sa.Column("status_code", sa.Integer, nullable=True),
    sa.Column("error", sa.String(500), nullable=True),
    sa.Column("outcome", sa.String(16), nullable=False),  # succeeded | retrying | failed | disabled
    sa.Index("ix_webhook_attempts_webhook", "webhook_id", "id"),
)
