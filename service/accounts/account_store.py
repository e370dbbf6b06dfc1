"""Subscriptions and API keys in a SQL database (SQLite file by default, PostgreSQL supported).

One ``AccountStore`` per process: it owns a connection pool. Create it after gunicorn forks,
never in the master, so that no pooled connection is shared between processes. Here: issuing
keys (a new subscription or an existing one), listing and revoking them, authenticating a presented
key (the request path) and the collector's ingest keys. What it answers is in principals.py; its
engine and schema in database.py; the tables in tables.py.
"""

from __future__ import annotations

import datetime as dt
import secrets
import string
from collections.abc import Collection
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import Engine

from service.accounts import keys
from service.accounts.database import create_schema, make_engine
from service.accounts.principals import (
    AmbiguousPrefix,
    AuthFailure,
    IngestKeyInfo,
    IngestPrincipal,
    KeyInfo,
    KeyNotFound,
    KeyRef,
    Principal,
)
from service.accounts.tables import api_keys, ingest_keys, subscriptions
from service.api.tiers import Tier
from service.clock import Clock, SystemClock

# Enough characters after "sig_live_" that a typo cannot revoke an arbitrary key.
MIN_PREFIX_SECRET_CHARS = 4
_NAME_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: names are read aloud
_CREATE_ATTEMPTS = 3


class AccountStore:
    """Subscriptions and their API keys.

    Database errors (``sqlalchemy.exc.SQLAlchemyError``) propagate: the caller decides whether
    that is a 503 or a CLI error message.
    """

    def __init__(self, url: str, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()
        self.db_engine: Engine = make_engine(url)  # SQLAlchemy's engine of the accounts database
        try:
            create_schema(self.db_engine)
        except BaseException:
            self.db_engine.dispose()
            raise

    # -- issuing keys ------------------------------------------------------------------

    def create_key(
        self,
        tier: Tier,
        subscription: str | None = None,
        expires_at: dt.datetime | None = None,
    ) -> tuple[str, KeyInfo]:
        """Issue a key; returns the key itself (to show once) and its listing.

        Without a subscription name a new subscription is created with a generated name.
        With a name, the key joins that subscription (created on first use); the tier must
        then match the subscription's, because the subscription, not the key, holds the tier.
        Raises ValueError for a bad name, a tier mismatch or an expiry not in the future.
        """
        now = self.clock.now()
        if expires_at is not None:
            if expires_at.tzinfo is None:
                raise ValueError("expires_at must be an aware datetime")
            expires_at = expires_at.astimezone(dt.UTC)
            if expires_at <= now:
                raise ValueError(f"expires_at {expires_at.isoformat()} is not in the future")
        name = _clean_subscription_name(subscription) if subscription is not None else None

        # A retry covers two operators creating the same new subscription at once (the
        # unique name refuses the second insert) and, in theory, a generated-name clash.
        for attempt in range(_CREATE_ATTEMPTS):
            key = keys.generate_key()
            try:
                with self.db_engine.begin() as connection:
                    subscription_id, subscription_name = self._subscription_for(connection, tier, name, now)
                    connection.execute(
                        api_keys.insert().values(
                            subscription_id=subscription_id,
                            prefix=keys.display_prefix(key),
                            key_hash=keys.hash_key(key),
                            created_at=now,
                            expires_at=expires_at,
                        )
                    )
            except exc.IntegrityError:
                if attempt == _CREATE_ATTEMPTS - 1:
                    raise
                continue
            info = KeyInfo(keys.display_prefix(key), subscription_name, tier, now, expires_at, None)
            return key, info
        raise AssertionError("unreachable")

    def _subscription_for(
        self, connection: sa.Connection, tier: Tier, name: str | None, now: dt.datetime
    ) -> tuple[int, str]:
        if name is not None:
            row = connection.execute(
                sa.select(subscriptions.c.id, subscriptions.c.tier).where(subscriptions.c.name == name)
            ).one_or_none()
            if row is not None:
                existing = Tier.parse(row.tier)
                if existing is not tier:
                    raise ValueError(
                        f"subscription {name!r} is on the {existing.label} tier, not {tier.label}: "
                        f"keys share their subscription's tier (ask for --tier {existing.slug}, "
                        f"or use another subscription name)"
                    )
                return row.id, name
        else:
            name = _generated_subscription_name()
        result = connection.execute(subscriptions.insert().values(name=name, tier=tier.slug, created_at=now))
        key = result.inserted_primary_key
        assert key is not None  # an INSERT's result has it
        (subscription_id,) = key
        return subscription_id, name

    # -- listing and revoking ------------------------------------------------------------

    def list_keys(self) -> list[KeyInfo]:
        """Every key, oldest first, revoked and expired ones included."""
        with self.db_engine.connect() as connection:
            rows = connection.execute(_key_info_query().order_by(api_keys.c.created_at, api_keys.c.id)).all()
        return [_key_info(row) for row in rows]

    def revoke(self, key_or_prefix: str) -> KeyInfo:
        """Revoke a key given in full or by a unique prefix (``sig_live_`` + 4 to 7 characters).

        Revoking an already revoked key changes nothing and returns it with its original
        ``revoked_at``: the call is safe to repeat, and the answer still says when it happened.
        Raises KeyNotFound (nothing matches, or the text is neither a key nor a prefix) or
        AmbiguousPrefix (several keys match; give more characters or the full key).
        """
        text = key_or_prefix.strip()
        if keys.looks_like_key(text):
            condition = api_keys.c.key_hash == keys.hash_key(text)
        elif _looks_like_prefix(text):
            # substr + equality, not LIKE: SQLite's LIKE ignores case, and base62 does not.
            condition = sa.func.substr(api_keys.c.prefix, 1, len(text)) == text
        else:
            # Echo at most a display prefix: the text may be a mistyped full key.
            shown = text if len(text) <= keys.DISPLAY_PREFIX_LENGTH else keys.display_prefix(text) + "…"
            raise KeyNotFound(
                f"{shown!r} is neither an API key nor a key prefix "
                f"({keys.KEY_PREFIX} followed by {MIN_PREFIX_SECRET_CHARS} to "
                f"{keys.DISPLAY_PREFIX_LENGTH - len(keys.KEY_PREFIX)} characters, as `keys list` shows)"
            )
        now = self.clock.now()
        with self.db_engine.begin() as connection:
            ids = connection.execute(sa.select(api_keys.c.id).where(condition).limit(2)).scalars().all()
            if not ids:
                raise KeyNotFound(f"no API key matches {text!r}" if len(text) < keys.KEY_LENGTH else "no such API key")
            if len(ids) > 1:
                raise AmbiguousPrefix(f"several API keys start with {text!r}; give more characters or the full key")
            connection.execute(
                api_keys.update().where(api_keys.c.id == ids[0], api_keys.c.revoked_at.is_(None)).values(revoked_at=now)
            )
            row = connection.execute(_key_info_query().where(api_keys.c.id == ids[0])).one()
        return _key_info(row)

    # -- the request path --------------------------------------------------------------
    # (Each worker looks its keys up again every SIGNALS_AUTH_CACHE_SECONDS, in batches: the
    # statement is built once, below, not per call.)

    def authenticate(self, presented: str | None) -> Principal | AuthFailure:
        """The subscription behind a presented key, or why it is refused.

        Malformed text is refused without touching the database. The row is found through
        the unique index on the hash, and its hash must then equal the presented key's
        exactly, so that the answer never depends on how the database compared strings.
        (A hash compared in variable time leaks nothing useful: a caller chooses keys, not
        their SHA-256 hashes.)
        """
        if not presented:
            return AuthFailure.MISSING
        if not keys.looks_like_key(presented):
            return AuthFailure.MALFORMED
        digest = keys.hash_key(presented)
        return self.authenticate_digests([digest])[digest]

    def authenticate_digests(self, digests: Collection[str]) -> dict[str, Principal | AuthFailure]:
        """`authenticate` for keys already hashed, many in one query: what each digest's key is
        worth now. For the cache of accepted keys, which checks its keys again in batches
        (one query for a few hundred keys costs about what one costs for a single key)."""
        return cast(dict[str, Principal | AuthFailure], self.authenticate_refs(digests))

    def authenticate_refs(self, refs: Collection[KeyRef]) -> dict[KeyRef, Principal | AuthFailure]:
        """What each key is worth now, in one query: a key named by its digest (str, a key
        presented) or by its id (int, the key a browser token was minted with,
        service/accounts/tokens.py). A revoked or expired key's tokens fail as the key does."""
        wanted = set(refs)
        if not wanted:
            return {}
        digests = sorted(ref for ref in wanted if isinstance(ref, str))
        ids = sorted(ref for ref in wanted if isinstance(ref, int))
        statement = _AUTHENTICATE_EITHER if digests and ids else _AUTHENTICATE if digests else _AUTHENTICATE_IDS
        with self.db_engine.connect() as connection:
            rows = connection.execute(statement, {"digests": digests, "ids": ids}).all()
        now = self.clock.now()
        outcomes: dict[KeyRef, Principal | AuthFailure] = dict.fromkeys(wanted, AuthFailure.UNKNOWN)
        for row in rows:
            outcome: Principal | AuthFailure
            if row.revoked_at is not None:
                outcome = AuthFailure.REVOKED
            elif row.expires_at is not None and row.expires_at <= now:
                outcome = AuthFailure.EXPIRED
            else:
                outcome = Principal(row.subscription_id, row.name, Tier.parse(row.tier), row.prefix,
                                    row.expires_at, row.key_id, row.key_hash)
            if row.key_hash in wanted:  # exact comparison, whatever the database's collation
                outcomes[row.key_hash] = outcome
            if row.key_id in wanted:
                outcomes[row.key_id] = outcome
        return outcomes

    # -- ingest keys (the event collector) ------------------------------------------------

    def create_ingest_key(self, name: str | None = None) -> tuple[str, IngestKeyInfo]:
        """Issue an ingest key: it may post events to the collector and read nothing."""
        now = self.clock.now()
        label = _clean_subscription_name(name) if name is not None else "ingest-" + _generated_subscription_name()[4:]
        key = keys.generate_ingest_key()
        with self.db_engine.begin() as connection:
            connection.execute(ingest_keys.insert().values(
                name=label, prefix=keys.display_prefix(key), key_hash=keys.hash_key(key), created_at=now))
        return key, IngestKeyInfo(keys.display_prefix(key), label, now, None)

    def list_ingest_keys(self) -> list[IngestKeyInfo]:
        with self.db_engine.connect() as connection:
            rows = connection.execute(sa.select(ingest_keys.c.prefix, ingest_keys.c.name, ingest_keys.c.created_at,
                                                ingest_keys.c.revoked_at).order_by(ingest_keys.c.id)).all()
        return [IngestKeyInfo(row.prefix, row.name, row.created_at, row.revoked_at) for row in rows]

    def revoke_ingest_key(self, key_or_prefix: str) -> IngestKeyInfo:
        """Revoke an ingest key given in full or by its prefix as `keys list` shows it."""
        text = key_or_prefix.strip()
        if keys.looks_like_ingest_key(text):
            condition = ingest_keys.c.key_hash == keys.hash_key(text)
        elif (text.startswith(keys.INGEST_KEY_PREFIX) and text[len(keys.INGEST_KEY_PREFIX):].isalnum() and text.isascii()
              and len(keys.INGEST_KEY_PREFIX) + MIN_PREFIX_SECRET_CHARS <= len(text) <= keys.INGEST_DISPLAY_PREFIX_LENGTH):
            # substr + equality, not LIKE (SQLite's LIKE ignores case; base62 does not)
            condition = sa.func.substr(ingest_keys.c.prefix, 1, len(text)) == text
        else:
            raise KeyNotFound(f"{text[: keys.INGEST_DISPLAY_PREFIX_LENGTH]!r} is not an ingest key or its prefix")
        now = self.clock.now()
        with self.db_engine.begin() as connection:
            ids = connection.execute(sa.select(ingest_keys.c.id).where(condition).limit(2)).scalars().all()
            if not ids:
                raise KeyNotFound("no ingest key matches")
            if len(ids) > 1:
                raise AmbiguousPrefix(f"several ingest keys start with {text!r}; give more characters or the full key")
            connection.execute(ingest_keys.update().where(ingest_keys.c.id == ids[0], ingest_keys.c.revoked_at.is_(None))
                               .values(revoked_at=now))
            row = connection.execute(sa.select(ingest_keys.c.prefix, ingest_keys.c.name, ingest_keys.c.created_at,
                                               ingest_keys.c.revoked_at).where(ingest_keys.c.id == ids[0])).one()
        return IngestKeyInfo(row.prefix, row.name, row.created_at, row.revoked_at)

    def authenticate_ingest(self, presented: str | None) -> IngestPrincipal | AuthFailure:
        """The ingest key behind a presented key, or why it is refused (as `authenticate`)."""
        if not presented:
            return AuthFailure.MISSING
        if not keys.looks_like_ingest_key(presented):
            return AuthFailure.MALFORMED
        digest = keys.hash_key(presented)
        with self.db_engine.connect() as connection:
            row = connection.execute(sa.select(ingest_keys.c.id, ingest_keys.c.name, ingest_keys.c.prefix,
                                               ingest_keys.c.key_hash, ingest_keys.c.revoked_at)
                                     .where(ingest_keys.c.key_hash == digest)).one_or_none()
        if row is None or row.key_hash != digest:
            return AuthFailure.UNKNOWN
        if row.revoked_at is not None:
            return AuthFailure.REVOKED
        return IngestPrincipal(row.id, row.name, row.prefix)

    # -- operations --------------------------------------------------------------------

    def ping(self) -> bool:
        """True when the database answers a trivial query (for /readyz)."""
        try:
            with self.db_engine.connect() as connection:
                connection.execute(sa.select(1))
        except exc.SQLAlchemyError:
            return False
        return True

    def close(self) -> None:
        """Close every pooled connection."""
        self.db_engine.dispose()


def _key_info_query() -> sa.Select[Any]:
    return sa.select(
        api_keys.c.prefix,
        subscriptions.c.name,
        subscriptions.c.tier,
        api_keys.c.created_at,
        api_keys.c.expires_at,
        api_keys.c.revoked_at,
    ).join(subscriptions, api_keys.c.subscription_id == subscriptions.c.id)


def _key_info(row: sa.Row[Any]) -> KeyInfo:
    return KeyInfo(row.prefix, row.name, Tier.parse(row.tier), row.created_at, row.expires_at, row.revoked_at)


def _looks_like_prefix(text: str) -> bool:
    secret_part = text[len(keys.KEY_PREFIX) :]
    return (
        text.startswith(keys.KEY_PREFIX)
        and MIN_PREFIX_SECRET_CHARS <= len(secret_part) <= keys.DISPLAY_PREFIX_LENGTH - len(keys.KEY_PREFIX)
        and all(c in string.ascii_letters or c in string.digits for c in secret_part)
    )


def _clean_subscription_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned:
        raise ValueError("the subscription name is empty")
    longest = cast(sa.String, subscriptions.c.name.type).length  # sa.String(100) in tables.py
    if longest is not None and len(cleaned) > longest:
        raise ValueError(f"the subscription name is longer than {longest} characters")
    if not cleaned.isprintable():
        raise ValueError("the subscription name contains control characters")
    return cleaned


def _generated_subscription_name() -> str:
    """A readable, practically unique name such as ``sub-k7m2p9qx`` (a clash is retried)."""
    return "sub-" + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(8))


_SELECT_KEYS = (
    sa.select(
        api_keys.c.id.label("key_id"),
        api_keys.c.key_hash,
        api_keys.c.prefix,
        api_keys.c.expires_at,
        api_keys.c.revoked_at,
        subscriptions.c.id.label("subscription_id"),
        subscriptions.c.name,
        subscriptions.c.tier,
    )
    .join(subscriptions, api_keys.c.subscription_id == subscriptions.c.id)
)
_BY_DIGEST = api_keys.c.key_hash.in_(sa.bindparam("digests", expanding=True))
_BY_ID = api_keys.c.id.in_(sa.bindparam("ids", expanding=True))
_AUTHENTICATE = _SELECT_KEYS.where(_BY_DIGEST)  # keys presented: the unique index on the hash
_AUTHENTICATE_IDS = _SELECT_KEYS.where(_BY_ID)  # the keys of browser tokens: the primary key
_AUTHENTICATE_EITHER = _SELECT_KEYS.where(sa.or_(_BY_DIGEST, _BY_ID))
