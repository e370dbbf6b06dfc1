"""Entity tags: the ETag of a body and If-None-Match (RFC 9110)."""

from __future__ import annotations

import hashlib


def etag_for(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def if_none_match(header: str | None, etag: str) -> bool:
    """True when an If-None-Match header matches the entity tag (weak comparison, RFC 9110)."""
    if not header:
        return False
    if header.strip() == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == wanted for tag in header.split(","))
