"""The noise of a release: one Gaussian draw per (table, measure, node, cell), made when the node is
released and stored with it; nothing here runs while a request is served.

A node's draws come from a counter-based generator (numpy's Philox) keyed by an HMAC of the node's
name under the release key (`release_key`: derived from SIGNALS_SECRET, never the secret itself),
one draw per cell of the node in domain order (a day or week node: the table's whole public domain;
an hour or quarter node: the day's hot cells, a set read from released numbers). So the same
secret and the same node give the same draws on every machine and both engines (the release is
identical, and a rebuild of a node from the same events repeats its numbers instead of drawing
fresh ones).

The draw is a continuous Gaussian of the node's s.d., rounded to an integer: rounding is
post-processing, so the Gaussian mechanism's guarantee (`accountant.py`) holds for the released
integers; it also removes the low-order bits of the floating-point sample that attacks on
floating-point noise read.
"""

from __future__ import annotations

import hashlib
import hmac

import numpy as np
import numpy.typing as npt

from service.release.levels import Node

_DOMAIN = b"signals release noise v1"


def release_key(secret: str) -> bytes:
    """The key every release draw is derived from (a release of one secret is one release)."""
    if not secret:  # an empty one would be a key anyone knows
        raise ValueError("the release secret must not be empty (SIGNALS_SECRET)")
    return hmac.digest(secret.encode(), _DOMAIN, "sha256")


def key_fingerprint(key: bytes) -> str:
    """A short, non-reversible name of the key (for logs and GET /api/v1/privacy)."""
    return hashlib.sha256(key).hexdigest()[:12]


def node_draws(key: bytes, table: str, measure: str, node: Node, cells: int, sigma: float) -> npt.NDArray[np.int64]:
    """`cells` rounded Gaussian draws of s.d. `sigma` for one node of one measure, in the order of
    the node's cells (the domain's order)."""
    name = f"{table}|{measure}|{node.level}|{node.start.isoformat()}".encode()
    seed = int.from_bytes(hmac.digest(key, name, "sha256"), "little")
    generator = np.random.Generator(np.random.Philox(seed))
    return np.rint(generator.standard_normal(cells) * sigma).astype(np.int64)


def scalar_draw(key: bytes, name: str, sigma: float) -> int:
    """One rounded Gaussian draw for a named scalar release (the repeat factors of `estimates.py`)."""
    seed = int.from_bytes(hmac.digest(key, f"scalar|{name}".encode(), "sha256"), "little")
    return int(np.rint(np.random.Generator(np.random.Philox(seed)).standard_normal() * sigma))
