"""Webhooks, the delivery outbox and the attempt log, in the accounts database (SQLite or
PostgreSQL; tables in service/accounts/tables.py).

Two decisions that must hold across any number of worker processes rest on single conditional
UPDATEs, atomic on both backends (SQLite serialises writers; PostgreSQL re-checks the WHERE
clause of an UPDATE that waited for a row lock):

- the cooldown: `cooldown_until` moves forward only where it has passed, and the alert is queued
  in the same transaction, so one alert per cooldown whoever evaluates;
- the delivery claim: a worker takes a due delivery by setting its lease where no live lease is
  held; a worker that dies lets its lease expire and another takes the delivery over.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import datetime as dt
import secrets
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from service.accounts.tables import subscriptions, webhook_attempts, webhook_deliveries, webhooks
from service.api.windows import iso_z
from service.clock import Clock, SystemClock
from service.webhooks.fields import MAX_WEBHOOKS_PER_SUBSCRIPTION

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32  # Standard Webhooks: 24 to 64 random bytes
PENDING, SUCCEEDED, FAILED = "pending", "succeeded", "failed"


class TooManyWebhooks(Exception):
    pass


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def new_id(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(16).replace("-", "A").replace("_", "B")


@dataclasses.dataclass(frozen=True)
class Claimed:
    """A delivery this worker holds the lease of, with what sending it needs."""

    id: str
    webhook_id: str
    payload: str
    attempts: int  # made before this one
    created_at: dt.datetime
    url: str
    secret: str
    enabled: bool
    token: str


def public(row: Any) -> dict[str, Any]:
    """A webhook as the API shows it (never the secret)."""
    return {
        "id": row.id, "url": row.url, "window": row.window, "dimension": row.dimension, "metric": row.metric,
        "threshold_pct": row.threshold_pct, "cooldown_minutes": row.cooldown_minutes,
        "min_baseline": row.min_baseline, "enabled": row.enabled, "description": row.description,
        "disabled_reason": row.disabled_reason,
        "created_at": iso_z(row.created_at), "updated_at": iso_z(row.updated_at),
        "cooldown_until": iso_z(row.cooldown_until) if row.cooldown_until else None,
    }


class WebhookStore:
    def __init__(self, db_engine: sa.Engine, clock: Clock | None = None) -> None:
        self.db_engine = db_engine  # SQLAlchemy's (the accounts database), not a query engine
        self.clock: Clock = clock or SystemClock()

    # -- management ---------------------------------------------------------------------

    def list(self, subscription_id: int) -> Sequence[Any]:
        with self.db_engine.connect() as c:
            return c.execute(sa.select(webhooks).where(webhooks.c.subscription_id == subscription_id)
                             .order_by(webhooks.c.created_at, webhooks.c.id)).all()

    def get(self, subscription_id: int, webhook_id: str) -> Any | None:
        with self.db_engine.connect() as c:
            return c.execute(sa.select(webhooks).where(webhooks.c.id == webhook_id,
                                                       webhooks.c.subscription_id == subscription_id)).one_or_none()

    def create(self, subscription_id: int, values: dict[str, Any]) -> tuple[Any, str]:
        """The new webhook and its secret (shown once); TooManyWebhooks past the limit."""
        now = self.clock.now()
        secret = new_secret()
        webhook_id = new_id("wh_")
        with self.db_engine.begin() as c:
            # Serialise creations per subscription (PostgreSQL row lock; SQLite's writer lock is
            # taken by the insert), then count with our own row included.
            c.execute(sa.select(subscriptions.c.id).where(subscriptions.c.id == subscription_id).with_for_update())
            c.execute(webhooks.insert().values(id=webhook_id, subscription_id=subscription_id, secret=secret,
                                               created_at=now, updated_at=now, **values))
            count = c.execute(sa.select(sa.func.count()).select_from(webhooks)
                              .where(webhooks.c.subscription_id == subscription_id)).scalar_one()
            if count > MAX_WEBHOOKS_PER_SUBSCRIPTION:
                raise TooManyWebhooks()  # rolls the insert back
            row = c.execute(sa.select(webhooks).where(webhooks.c.id == webhook_id)).one()
        return row, secret

    def update(self, subscription_id: int, webhook_id: str, values: dict[str, Any]) -> Any | None:
        changes = dict(values, updated_at=self.clock.now())
        if values.get("enabled") is True:
            changes["disabled_reason"] = None
        with self.db_engine.begin() as c:
            result = c.execute(webhooks.update().where(webhooks.c.id == webhook_id,
                                                       webhooks.c.subscription_id == subscription_id).values(**changes))
            if result.rowcount != 1:
                return None
            return c.execute(sa.select(webhooks).where(webhooks.c.id == webhook_id)).one()

    def delete(self, subscription_id: int, webhook_id: str) -> bool:
        with self.db_engine.begin() as c:
            owned = sa.select(webhooks.c.id).where(webhooks.c.id == webhook_id,
                                                   webhooks.c.subscription_id == subscription_id)
            if c.execute(owned).one_or_none() is None:
                return False
            # Explicit, so it holds on a SQLite connection without foreign_keys too.
            c.execute(webhook_attempts.delete().where(webhook_attempts.c.webhook_id == webhook_id))
            c.execute(webhook_deliveries.delete().where(webhook_deliveries.c.webhook_id == webhook_id))
            c.execute(webhooks.delete().where(webhooks.c.id == webhook_id))
        return True

    def rotate_secret(self, subscription_id: int, webhook_id: str) -> tuple[Any, str] | None:
        secret = new_secret()
        row = self._set(subscription_id, webhook_id, secret=secret, updated_at=self.clock.now())
        return (row, secret) if row is not None else None

    def _set(self, subscription_id: int, webhook_id: str, **values: Any) -> Any | None:
        with self.db_engine.begin() as c:
            result = c.execute(webhooks.update().where(webhooks.c.id == webhook_id,
                                                       webhooks.c.subscription_id == subscription_id).values(**values))
            if result.rowcount != 1:
                return None
            return c.execute(sa.select(webhooks).where(webhooks.c.id == webhook_id)).one()

    def attempts(self, subscription_id: int, webhook_id: str, limit: int, before: int | None) -> Sequence[Any]:
        """Attempts of one webhook, newest first; `before` = the id of the last one already seen."""
        query = (sa.select(webhook_attempts, webhook_deliveries.c.event)
                 .join(webhook_deliveries, webhook_attempts.c.delivery_id == webhook_deliveries.c.id)
                 .join(webhooks, webhook_attempts.c.webhook_id == webhooks.c.id)
                 .where(webhooks.c.id == webhook_id, webhooks.c.subscription_id == subscription_id)
                 .order_by(webhook_attempts.c.id.desc()).limit(limit))
        if before is not None:
            query = query.where(webhook_attempts.c.id < before)
        with self.db_engine.connect() as c:
            return c.execute(query).all()

    # -- the worker ---------------------------------------------------------------------

    def enabled_webhooks(self) -> Sequence[Any]:
        with self.db_engine.connect() as c:
            return c.execute(sa.select(webhooks).where(webhooks.c.enabled.is_(True))).all()

    def claim_cooldown_and_enqueue(self, webhook_id: str, cooldown_minutes: int, event: str,
                                   payload_for: Any, now: dt.datetime) -> str | None:
        """Queue an alert if the webhook's cooldown has passed, and start a new cooldown, atomically.
        `payload_for(delivery_id)` makes the body. None when another worker (or an earlier round)
        holds the cooldown."""
        until = now + dt.timedelta(minutes=cooldown_minutes)
        with self.db_engine.begin() as c:
            result = c.execute(
                webhooks.update()
                .where(webhooks.c.id == webhook_id, webhooks.c.enabled.is_(True),
                       sa.or_(webhooks.c.cooldown_until.is_(None), webhooks.c.cooldown_until <= now))
                .values(cooldown_until=until)
            )
            if result.rowcount != 1:
                return None
            return self._insert_delivery(c, webhook_id, event, payload_for, now)

    def claim_cooldowns_and_enqueue(self, claims: builtins.list[tuple[Any, Any]], event: str, now: dt.datetime) -> int:
        """`claim_cooldown_and_enqueue` for many webhooks (each (row, payload_for)) in one transaction:
        each claim is still its own conditional UPDATE, so each webhook alerts at most once per
        cooldown; one commit instead of one per webhook. The number queued."""
        queued = 0
        with self.db_engine.begin() as c:
            for hook, payload_for in claims:
                result = c.execute(
                    webhooks.update()
                    .where(webhooks.c.id == hook.id, webhooks.c.enabled.is_(True),
                           sa.or_(webhooks.c.cooldown_until.is_(None), webhooks.c.cooldown_until <= now))
                    .values(cooldown_until=now + dt.timedelta(minutes=hook.cooldown_minutes)))
                if result.rowcount == 1:
                    self._insert_delivery(c, hook.id, event, payload_for, now)
                    queued += 1
        return queued

    def enqueue(self, webhook_id: str, event: str, payload_for: Any, now: dt.datetime) -> str:
        with self.db_engine.begin() as c:
            return self._insert_delivery(c, webhook_id, event, payload_for, now)

    @staticmethod
    def _insert_delivery(c: sa.Connection, webhook_id: str, event: str, payload_for: Any, now: dt.datetime) -> str:
        delivery_id = new_id("msg_")
        c.execute(webhook_deliveries.insert().values(
            id=delivery_id, webhook_id=webhook_id, event=event, payload=payload_for(delivery_id), created_at=now,
            status=PENDING, attempts=0, next_attempt_at=now))
        return delivery_id

    def due(self, now: dt.datetime, limit: int) -> builtins.list[str]:  # `list` is a method here
        d = webhook_deliveries
        with self.db_engine.connect() as c:
            return list(c.execute(
                sa.select(d.c.id).where(d.c.status == PENDING, d.c.next_attempt_at <= now,
                                        sa.or_(d.c.lease_until.is_(None), d.c.lease_until <= now))
                .order_by(d.c.next_attempt_at).limit(limit)).scalars())

    def claim(self, delivery_id: str, now: dt.datetime, lease: dt.timedelta) -> Claimed | None:
        """Take the delivery's lease, or None if another worker holds it (or it is done)."""
        d = webhook_deliveries
        token = secrets.token_hex(8)
        with self.db_engine.begin() as c:
            result = c.execute(
                d.update().where(d.c.id == delivery_id, d.c.status == PENDING, d.c.next_attempt_at <= now,
                                 sa.or_(d.c.lease_until.is_(None), d.c.lease_until <= now))
                .values(lease_until=now + lease, leased_by=token))
            if result.rowcount != 1:
                return None
            row = c.execute(
                sa.select(d.c.id, d.c.webhook_id, d.c.payload, d.c.attempts, d.c.created_at, webhooks.c.url,
                          webhooks.c.secret, webhooks.c.enabled)
                .join(webhooks, d.c.webhook_id == webhooks.c.id).where(d.c.id == delivery_id)).one()
        return Claimed(row.id, row.webhook_id, row.payload, row.attempts, row.created_at, row.url, row.secret,
                       row.enabled, token)

    def finish(self, claimed: Claimed, *, started_at: dt.datetime, duration_ms: int, status_code: int | None,
               error: str | None, outcome: str, status: str, next_attempt_at: dt.datetime | None,
               disable_reason: str | None = None) -> bool:
        """Log the attempt and move the delivery on, if the lease is still ours."""
        d = webhook_deliveries
        with self.db_engine.begin() as c:
            result = c.execute(
                d.update().where(d.c.id == claimed.id, d.c.leased_by == claimed.token)
                .values(status=status, attempts=claimed.attempts + 1, next_attempt_at=next_attempt_at,
                        lease_until=None, leased_by=None))
            if result.rowcount != 1:
                return False
            c.execute(webhook_attempts.insert().values(
                delivery_id=claimed.id, webhook_id=claimed.webhook_id, attempt=claimed.attempts + 1,
                started_at=started_at, duration_ms=duration_ms, status_code=status_code,
                error=(error or None) and error[:500], outcome=outcome))
            if disable_reason:
                c.execute(webhooks.update().where(webhooks.c.id == claimed.webhook_id)
                          .values(enabled=False, disabled_reason=disable_reason, updated_at=started_at))
        return True
