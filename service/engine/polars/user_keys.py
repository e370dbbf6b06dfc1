"""How many low bits of the users' ids a snapshot can spare for the cell's codes (engine/polars/cell_keys.py:
one grouping key per cell and user), learnt once per snapshot and machine.

Two users agree on their ids above bit `b` exactly when the XOR of their ids is below 2^b, and among
sorted distinct numbers the smallest XOR of any two is that of two neighbours. So the largest safe
`b` is the bit length of the smallest neighbours' XOR among the suppressions' distinct users, less
one (5 million users at 100M events: about 4 s and some 300 MB for that moment, the distinct ids
gathered a few million rows at a time).

Every process that reads a new generation needs the number, and they all get it at once (the web
workers, precompute and the alert worker when a landing is published). So one of them computes it,
under a lock in the snapshot's directory, and writes it there (`user-bits.json`); the others wait
on the lock and read it. Each asks in a background thread, so that no request waits: until the
number is known the engine groups by cell and user as separate columns, the same groups, so the
same answers, only slower. Frames that are no mapped snapshot (tests, the Parquet fallback) are
learnt in the process.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import weakref

import numpy as np
import polars as pl

from service.store.reader import EventFrames

log = logging.getLogger(__name__)

USER = "user_id"
CHUNK_ROWS = 5_000_000
SHARED = "user-bits.json"  # in the snapshot's directory: {"bits": b}
_LOCK = ".user-bits.lock"

_known: weakref.WeakKeyDictionary[EventFrames, int] = weakref.WeakKeyDictionary()
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
    ordered = distinct.sort().to_numpy()
    if len(ordered) < 2:
        return 63
    smallest = int(np.bitwise_xor(ordered[1:], ordered[:-1]).min())
    return smallest.bit_length() - 1


def learn(frames: EventFrames) -> int:
    """The suppressions' spare bits, now: kept while the snapshot lives; read from the snapshot's
    directory when another process computed them, else computed (and written there)."""
    known = _known.get(frames)
    if known is None:
        shared = _shared(frames) if frames.directory is not None else None
        known = shared if shared is not None else _compute(frames)
        with _lock:
            _known[frames] = known
    return known


def _compute(frames: EventFrames) -> int:
    return spare_bits(frames.suppressions.get_column(USER))


def _shared(frames: EventFrames) -> int | None:
    """The number kept in the snapshot's directory, computed and kept there first if no process
    has; None where the directory cannot be used (removed by a newer landing, say)."""
    assert frames.directory is not None
    path = frames.directory / SHARED
    try:
        lock = open(frames.directory / _LOCK, "a")  # noqa: SIM115 (held until the with below ends)
    except OSError:
        return None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        try:
            return int(json.loads(path.read_text())["bits"])
        except (OSError, ValueError, KeyError, TypeError):  # not there yet (or unreadable): compute it
            pass
        bits = _compute(frames)
        staged = path.with_name(f".{SHARED}.{os.getpid()}")
        try:
            staged.write_text(json.dumps({"bits": bits}))
            os.replace(staged, path)
        except OSError:  # a read-only directory: each process computes its own
            staged.unlink(missing_ok=True)
        return bits


def known_bits(frames: EventFrames) -> int:
    """The suppressions' spare bits if they are known; else 0 (group by the two columns), and
    learning them starts in the background."""
    known = _known.get(frames)
    if known is not None:
        return known
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
