"""What the accounts store answers: who is calling (`Principal` for a subscription's key,
`IngestPrincipal` for an ingest key) or why a key is refused (`AuthFailure`); keys as operators
see them (`KeyInfo`, `IngestKeyInfo`); and why an operator's key or prefix matched nothing, or
too much (`AccountError`: `KeyNotFound`, `AmbiguousPrefix`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum

from service.api.tiers import Tier


class AccountError(LookupError):
    """A key or subscription asked for by an operator could not be found unambiguously."""


class KeyNotFound(AccountError):
    pass


class AmbiguousPrefix(AccountError):
    pass


class AuthFailure(enum.Enum):
    """Why a presented key was refused; the value is a short reason fit for a 401 body."""

    MISSING = "no API key was sent (use the header Authorization: Bearer <key>)"
    MALFORMED = "the API key is malformed"
    UNKNOWN = "the API key is not recognised"
    REVOKED = "the API key has been revoked"
    EXPIRED = "the API key has expired"


@dataclasses.dataclass(frozen=True)
class Principal:
    """Who is calling: the subscription behind an accepted key."""

    subscription_id: int
    subscription_name: str
    tier: Tier
    key_prefix: str
    expires_at: dt.datetime | None = None  # lets a cache of accepted keys respect expiry
    key_id: int | None = None  # the key's row: what a browser token minted with it names (service/accounts/tokens.py)
    # The key's SHA-256 hash, which a browser token is bound to (service/accounts/tokens.py, `key_binding`);
    # never shown.
    key_hash: str | None = dataclasses.field(default=None, repr=False)


# How the accounts store is asked about a key (`AccountStore.authenticate_refs`): by the SHA-256
# digest of the key presented (str), or by the key's id (int), which a browser token names.
KeyRef = str | int


@dataclasses.dataclass(frozen=True)
class IngestPrincipal:
    """Who is posting events: an ingest key (service/collector/)."""

    key_id: int
    name: str
    key_prefix: str


@dataclasses.dataclass(frozen=True)
class IngestKeyInfo:
    """An ingest key as operators see it. Never holds the key or its hash."""

    prefix: str
    name: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None


@dataclasses.dataclass(frozen=True)
class KeyInfo:
    """A key as operators see it. Never holds the key or its hash."""

    prefix: str
    subscription_name: str
    tier: Tier
    created_at: dt.datetime
    expires_at: dt.datetime | None
    revoked_at: dt.datetime | None

    def status(self, now: dt.datetime) -> str:
        """``active``, ``revoked`` or ``expired`` at ``now`` (revocation wins, as in authenticate)."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"
