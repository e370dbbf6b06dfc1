"""Accounts: subscriptions and their API keys (hashed), in SQLite or PostgreSQL."""

from service.accounts.account_store import AccountStore
from service.accounts.database import create_schema, make_engine
from service.accounts.keys import KEY_PREFIX, display_prefix, generate_key, hash_key, looks_like_key
from service.accounts.principals import (
    AccountError,
    AmbiguousPrefix,
    AuthFailure,
    IngestKeyInfo,
    IngestPrincipal,
    KeyInfo,
    KeyNotFound,
    Principal,
)

__all__ = [
    "KEY_PREFIX",
    "AccountError",
    "AccountStore",
    "AmbiguousPrefix",
    "AuthFailure",
    "IngestKeyInfo",
    "IngestPrincipal",
    "KeyInfo",
    "KeyNotFound",
    "Principal",
    "create_schema",
    "display_prefix",
    "generate_key",
    "hash_key",
    "looks_like_key",
    "make_engine",
]
