"""How many low bits of the users' ids a snapshot can spare for the cell's codes (engine/cell_keys.py:
one grouping key per cell and user), learnt once per snapshot and table.

Two users agree on their ids above bit `b` exactly when the XOR of their ids is below 2^b, and among
sorted distinct numbers the smallest XOR of any two is that of two neighbours. So the largest safe
`b` is the bit length of the smallest neighbours' XOR among the table's distinct users, less one
(5 million users at 100M events: a few seconds and about 300 MB for that moment, the distinct ids
gathered a few million rows at a time). It is learnt in a background thread, so that no request
waits for it; until it is known the engine groups by cell and user as separate columns: the same
groups, so the same answers, only slower.
"""

from __future__ import annotations

import logging
import threading
import weakref

import numpy as np
import polars as pl

from service.store import schema
from service.store.reader import EventFrames

log = logging.getLogger(__name__)

USER = "user_id"
CHUNK_ROWS = 5_000_000

_known: weakref.WeakKeyDictionary[EventFrames, dict[str, int]] = weakref.WeakKeyDictionary()
_learning: weakref.WeakSet[EventFrames] = weakref.WeakSet()
_lock = threading.Lock()


def spare_bits(users: pl.Series) -> int:
    """The largest b such that no two distinct values of `users` (UInt64) agree above bit b: 0 when
    two agree everywhere but the lowest bit, or when some value is null."""
    if users.null_count():  # rows without a user would group across cells: never packed
        return 0
    # The distinct ids a few million rows at a time, so that the temporary hash tables stay small
    # (one pass over 100M rows would take some 900 MB for a moment; this about a fifth).
    distinct = pl.Series(users.name, [], dtype=users.dtype)
    for start in range(0, users.len(), CHUNK_ROWS):
        distinct = pl.concat([distinct, users.slice(start, CHUNK_ROWS).unique()]).unique()
    distinct = distinct.sort().to_numpy()
    if len(distinct) < 2:
        return 63
    smallest = int(np.bitwise_xor(distinct[1:], distinct[:-1]).min())
    return smallest.bit_length() - 1


def learn(frames: EventFrames) -> dict[str, int]:
    """Each table's spare bits, computed now (and kept while the snapshot lives)."""
    known = _known.get(frames)
    if known is None:
        known = {table: spare_bits(getattr(frames, table).get_column(USER)) for table in schema.TABLES}
        with _lock:
            _known[frames] = known
    return known


def known_bits(frames: EventFrames, table: str) -> int:
    """The table's spare bits if they are known; else 0 (group by the two columns), and learning them
    starts in the background."""
    known = _known.get(frames)
    if known is not None:
        return known[table]
    with _lock:
        start = frames not in _known and frames not in _learning
        if start:
            _learning.add(frames)
    if start:
        threading.Thread(target=_learn_quietly, args=(frames,), name="user-key-bits", daemon=True).start()
    return 0


def _learn_quietly(frames: EventFrames) -> None:
    try:
        learn(frames)
    except Exception:  # a speed-up only: the two columns stay the key
        log.exception("could not learn the user ids' spare bits; grouping by cell and user as two columns")
