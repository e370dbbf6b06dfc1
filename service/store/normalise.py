"""Normalisation of keywords and domains, shared by ingest and by query parameters.

A keyword asked for in a query is normalised exactly as stored keywords were, so
`?keyword=%20Elon%20%20MUSK` finds the events stored under `elon musk`.
"""

from __future__ import annotations

import re
import unicodedata

KEYWORD_MAX_CHARS = 100
_SPACES = re.compile(r"\s+")


def normalise_keyword(raw: str) -> str:
    """NFKC, casefold, trim, collapse inner whitespace. May return '' (caller rejects it)."""
    text = unicodedata.normalize("NFKC", raw).casefold()
    return _SPACES.sub(" ", text).strip()


def normalise_domain(raw: str) -> str:
    """Lowercase host name without scheme, port, path, trailing dot or leading 'www.'."""
    text = raw.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    text = text.rsplit("@", 1)[-1].split(":", 1)[0].rstrip(".")
    if text.startswith("www."):
        text = text[4:]
    return text
