"""Browser tokens: short-lived credentials that a subscription's key mints for a web page
(POST /api/v1/tokens, service/http/resources/tokens.py).

A token is a JWT signed with HS256 (PyJWT) under a key derived from SIGNALS_SECRET by HMAC with a
label of its own (`TOKEN_KEY_LABEL`), never the secret itself: the secret also keys the privacy
noise, and a key derived for one use cannot be turned into another's. It says which API key
minted it (the key's id, and `key_binding`: a digest of the key's stored hash, so that a token
names one key whatever becomes of ids, and cannot be made without the accounts database even
where the secret is known), until when it works, the
origins it works from, the data endpoints it may call and the parameters it fixes. Reading one costs no database query: its signature and
expiry are checked here, and the key it names is looked up in the per-worker cache of accepted
keys (service/accounts/cached.py, `authenticate_key_id`), so revoking or expiring the key stops
its tokens as it stops the key. Changing SIGNALS_SECRET stops every token.

Tokens are never stored and never logged: a page holds one for as long as it lives.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Any

import jwt

TOKEN_KEY_LABEL = b"signals/browser-tokens/v1"
_BINDING_LABEL = b"signals/browser-token-binding/v1"
ISSUER = "signals"
AUDIENCE = "signals-api"
ALGORITHM = "HS256"
# A token travels in a header: gunicorn takes header fields of up to 8,190 bytes, and proxies often
# less. Minting refuses a token longer than this (origins and fixed values make its length).
MAX_TOKEN_LENGTH = 4096
_CLAIMS = ("iss", "aud", "iat", "exp", "key", "kb", "origins", "endpoints", "fixed")
# Three base64url parts; a JSON header always starts with '{"', which is "eyJ" in base64.
_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


@dataclasses.dataclass(frozen=True)
class BrowserToken:
    """What a token allows: the API key it acts for (by id), its origins, its data endpoints (the
    operation names of service/api/endpoints.py) and fixed parameters, and its lifetime."""

    key_id: int
    key_binding: str
    origins: tuple[str, ...]
    endpoints: tuple[str, ...]
    fixed: Mapping[str, Any]
    issued_at: dt.datetime
    expires_at: dt.datetime

    def expired(self, now: dt.datetime) -> bool:
        return now >= self.expires_at


def key_binding(key_hash: str) -> str:
    """What a token says of its key's stored hash: 128 bits of a digest of it (which tells nothing
    of the key or its hash)."""
    digest = hashlib.sha256(_BINDING_LABEL + key_hash.encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def binds(token: BrowserToken, key_hash: str | None) -> bool:
    """True when `token` was minted with the key whose stored hash is `key_hash`."""
    return key_hash is not None and hmac.compare_digest(token.key_binding, key_binding(key_hash))


def looks_like_token(text: str) -> bool:
    """True when `text` has a JWT's shape (what a key never has), so it is read as a token."""
    return len(text) <= MAX_TOKEN_LENGTH and _SHAPE.fullmatch(text) is not None


class TokenSigner:
    """Signs and reads browser tokens under the key derived from the deployment's secret."""

    def __init__(self, secret: str) -> None:
        if not secret:  # an empty one would be a key anyone knows: every token forgeable
            raise ValueError("the token secret must not be empty (SIGNALS_SECRET)")
        self._key = hmac.digest(secret.encode(), TOKEN_KEY_LABEL, "sha256")

    def sign(self, token: BrowserToken) -> str:
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "iat": int(token.issued_at.timestamp()),
            "exp": int(token.expires_at.timestamp()),
            "key": token.key_id,
            "kb": token.key_binding,
            "origins": list(token.origins),
            "endpoints": list(token.endpoints),
            "fixed": dict(token.fixed),
        }
        return jwt.encode(claims, self._key, algorithm=ALGORITHM)

    def read(self, text: str) -> BrowserToken | None:
        """The token's claims when this deployment signed them, expired or not (the caller
        compares `expires_at` with its clock, so tests can move time); None for anything else."""
        try:
            # Expiry is checked against the service's clock (service/clock.py), not PyJWT's.
            claims = jwt.decode(text, self._key, algorithms=[ALGORITHM], audience=AUDIENCE, issuer=ISSUER,
                                options={"require": list(_CLAIMS), "verify_exp": False, "verify_iat": False,
                                         "verify_nbf": False})
            key, origins, endpoints, fixed = claims["key"], claims["origins"], claims["endpoints"], claims["fixed"]
            if not (isinstance(key, int) and isinstance(claims["kb"], str) and isinstance(origins, list)
                    and isinstance(endpoints, list)
                    and isinstance(fixed, dict) and isinstance(claims["iat"], int) and isinstance(claims["exp"], int)):
                return None
            return BrowserToken(key, claims["kb"], tuple(origins), tuple(endpoints), fixed,
                                dt.datetime.fromtimestamp(claims["iat"], dt.UTC),
                                dt.datetime.fromtimestamp(claims["exp"], dt.UTC))
        except (jwt.InvalidTokenError, ValueError, OverflowError, OSError):
            return None
