"""The values a demo event is drawn from, with their relative weights: the filter keywords
(`vocabulary.txt` beside this module), real sites, platforms, page contexts and keyword-change
actions."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import polars as pl

VOCABULARY_FILE = Path(__file__).resolve().parent.parent / "release" / "vocabulary" / "keywords.txt"

# Real sites where feeds, comments and search results get filtered, with rough relative weights.
DOMAINS: tuple[tuple[str, float], ...] = (
    ("reddit.com", 160), ("youtube.com", 150), ("x.com", 120), ("facebook.com", 80),
    ("instagram.com", 60), ("tiktok.com", 55), ("google.com", 45), ("twitter.com", 25),
    ("threads.net", 20), ("bsky.app", 18), ("linkedin.com", 18), ("tumblr.com", 12),
    ("pinterest.com", 10), ("quora.com", 9), ("twitch.tv", 12), ("ycombinator.com", 6),
    ("medium.com", 6), ("substack.com", 7), ("bing.com", 6), ("duckduckgo.com", 4),
    ("yahoo.com", 10), ("msn.com", 9), ("cnn.com", 14), ("foxnews.com", 12),
    ("nytimes.com", 12), ("washingtonpost.com", 8), ("bbc.co.uk", 10), ("bbc.com", 7),
    ("theguardian.com", 9), ("nbcnews.com", 6), ("cbsnews.com", 5), ("go.com", 4),
    ("usatoday.com", 5), ("wsj.com", 4), ("bloomberg.com", 4), ("reuters.com", 5),
    ("apnews.com", 5), ("npr.org", 4), ("politico.com", 4), ("thehill.com", 4),
    ("huffpost.com", 4), ("buzzfeed.com", 5), ("dailymail.co.uk", 7), ("nypost.com", 6),
    ("forbes.com", 5), ("businessinsider.com", 4), ("cnbc.com", 3), ("espn.com", 9),
    ("bleacherreport.com", 3), ("theverge.com", 4), ("techcrunch.com", 2), ("wired.com", 2),
    ("ign.com", 4), ("imdb.com", 5), ("rottentomatoes.com", 3), ("fandom.com", 6),
    ("amazon.com", 6), ("ebay.com", 2), ("9gag.com", 3), ("imgur.com", 3), ("tmz.com", 4),
    ("people.com", 4), ("eonline.com", 2), ("variety.com", 2), ("deadline.com", 2),
    ("spiegel.de", 2), ("lemonde.fr", 2), ("cbc.ca", 3), ("abc.net.au", 2), ("ndtv.com", 2),
    ("globo.com", 2), ("news.com.au", 2),
)  # fmt: skip

PLATFORMS: tuple[tuple[str, float], ...] = (
    ("chrome", 40), ("safari", 14), ("ios", 16), ("android", 17), ("firefox", 6), ("edge", 5), ("other", 2),
)  # fmt: skip
PAGE_CONTEXTS: tuple[tuple[str, float], ...] = (
    ("feed", 38), ("comments", 20), ("search", 10), ("video", 14), ("article", 10), ("profile", 5), ("other", 3),
)  # fmt: skip
ACTIONS: tuple[tuple[str, float], ...] = (("add", 60), ("remove", 28), ("edit", 12))


def load_vocabulary(path: Path = VOCABULARY_FILE) -> tuple[str, ...]:
    """The demo keywords: one per line, '#' comments and blank lines skipped."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return tuple(dict.fromkeys(line for line in lines if line and not line.startswith("#")))


def weights(pairs: Sequence[tuple[str, float]]) -> tuple[pl.Series, list[float]]:
    """(the values, their weights) of (value, weight) pairs."""
    return pl.Series([p[0] for p in pairs], dtype=pl.String), [p[1] for p in pairs]


@functools.cache
def values(dimension: str) -> pl.Series:
    """The values of a fixed-list dimension, in the order its weights use."""
    pairs = {"domain": DOMAINS, "platform": PLATFORMS, "page_context": PAGE_CONTEXTS, "action": ACTIONS}[dimension]
    return weights(pairs)[0]


def index_of(values: pl.Series, value: str) -> int:
    """The index of `value` in `values` (one of this catalogue's lists, which holds it)."""
    index = values.index_of(value)
    if index is None:
        raise ValueError(f"{value!r} is not in {values.name or 'the list'}")
    return index
