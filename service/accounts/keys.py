"""The API key format: generation, hashing and the exact shape check.

A key is ``sig_live_`` followed by 40 random base62 characters (about 238 bits from
``secrets``). Only its SHA-256 hash is stored; the first 16 characters are kept in clear
as a display prefix so that operators and subscribers can tell keys apart.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string

KEY_PREFIX = "sig_live_"
SECRET_LENGTH = 40
KEY_LENGTH = len(KEY_PREFIX) + SECRET_LENGTH
DISPLAY_PREFIX_LENGTH = len(KEY_PREFIX) + 7

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
# Explicit ASCII classes: \w or str.isalnum() would also accept non-ASCII letters and digits.
_KEY_PATTERN = re.compile(rf"{re.escape(KEY_PREFIX)}[0-9A-Za-z]{{{SECRET_LENGTH}}}")


def generate_key() -> str:
    """A new random key. Shown once to its owner, never stored."""
    return KEY_PREFIX + "".join(secrets.choice(_BASE62) for _ in range(SECRET_LENGTH))


def hash_key(key: str) -> str:
    """SHA-256 hex digest of the key: what the database stores and looks keys up by.

    A plain (unsalted, fast) hash is enough here: the key carries ~238 random bits, so
    there is nothing to brute-force, and a deterministic hash is what makes an indexed
    lookup possible.
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def looks_like_key(text: str) -> bool:
    """True when text has exactly the key format, so malformed tokens never reach the database."""
    # The length check first keeps a huge header from costing a regex scan.
    return len(text) == KEY_LENGTH and _KEY_PATTERN.fullmatch(text) is not None


# Ingest keys (the event collector): another prefix, so that neither kind of key is ever taken for
# the other: a subscription key cannot post events, an ingest key is malformed to the read API.
INGEST_KEY_PREFIX = "sig_ingest_"
INGEST_KEY_LENGTH = len(INGEST_KEY_PREFIX) + SECRET_LENGTH
INGEST_DISPLAY_PREFIX_LENGTH = len(INGEST_KEY_PREFIX) + 7
_INGEST_PATTERN = re.compile(rf"{re.escape(INGEST_KEY_PREFIX)}[0-9A-Za-z]{{{SECRET_LENGTH}}}")


def generate_ingest_key() -> str:
    return INGEST_KEY_PREFIX + "".join(secrets.choice(_BASE62) for _ in range(SECRET_LENGTH))


def looks_like_ingest_key(text: str) -> bool:
    return len(text) == INGEST_KEY_LENGTH and _INGEST_PATTERN.fullmatch(text) is not None


def display_prefix(key: str) -> str:
    """The part of a key that may be shown and stored in clear: ``sig_live_`` + 7 characters."""
    if key.startswith(INGEST_KEY_PREFIX):
        return key[:INGEST_DISPLAY_PREFIX_LENGTH]
    return key[:DISPLAY_PREFIX_LENGTH]
