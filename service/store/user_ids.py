"""User ids are stored only as keyed hashes (`hash_user_ids`)."""

from __future__ import annotations

import hashlib

import polars as pl

from service.store.kinds import spread


def _hash_key(secret: str) -> bytes:
    if not secret:
        raise ValueError("the user id hashing secret must not be empty")
    key = secret.encode("utf-8")
    # BLAKE2b takes keys of at most 64 bytes; a longer secret is condensed, not truncated.
    return key if len(key) <= 64 else hashlib.blake2b(key, digest_size=64).digest()


def hash_user_ids(raw: pl.Series, secret: str) -> pl.Series:
    """Keyed 64-bit BLAKE2b of each id (UTF-8), as big-endian UInt64; nulls stay null.

    Each distinct id is hashed once. The same id and secret always give the same value, so
    distinct-user counts work on the hashes; without the secret the raw ids cannot be recovered
    or tested against guesses.
    """
    key = _hash_key(secret)
    text = raw.cast(pl.String)
    distinct = text.drop_nulls().unique()
    if distinct.len() == 0:
        return pl.Series(raw.name, [None] * raw.len(), dtype=pl.UInt64)
    hashed = [
        int.from_bytes(hashlib.blake2b(v.encode("utf-8"), key=key, digest_size=8).digest(), "big")
        for v in distinct.to_list()
    ]
    return spread(text, distinct, pl.Series(hashed, dtype=pl.UInt64)).rename(raw.name)
