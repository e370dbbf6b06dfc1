"""Consistent noise (the package docstring, point 1): each cell's description hashed under the
secret gives uniform numbers, each pair of them one draw of two-sided geometric ("discrete
Laplace") noise."""

from __future__ import annotations

import hashlib
import hmac
import math
import struct
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

import polars as pl
import pyarrow as pa

from service.privacy.params import (
    EVENTS,
    KEYWORD_COUNT,
    PILOT,
    SUPPRESSIONS,
    UNIQUE_USERS,
    PrivacyParams,
    geometric_std,
)

# Each draw has its own slot of the cell's digest: 2 x 32 bits per slot, 8 slots = 512 bits.
if TYPE_CHECKING:
    from service.privacy.cells import Seeds

_SLOTS = {UNIQUE_USERS: 0, SUPPRESSIONS: 1, EVENTS: 2, KEYWORD_COUNT: 3,
          SUPPRESSIONS + PILOT: 4, EVENTS + PILOT: 5}
_U32 = 2.0**32
_NOISE_DOMAIN = b"signals privacy noise v1"


def noise_key(secret: str) -> bytes:
    """The key the cell descriptions are hashed under, derived from the secret."""
    return hmac.digest(secret.encode(), _NOISE_DOMAIN, "sha256")


def noise_key_fingerprint(secret: str) -> str:
    """A short, non-reversible fingerprint of the noise key (for logs: which secret is in use)."""
    return hashlib.sha256(noise_key(secret)).hexdigest()[:8]


class Uniforms(Sequence[pl.Series]):
    """Sixteen UInt32 series, the i-th holding each message's i-th little-endian word of its
    digest; each taken from the digests when first read (a draw reads two of them)."""

    def __init__(self, words: pl.Series) -> None:
        self._words = words  # every message's 16 words, one message after the other
        self._taken: dict[int, pl.Series] = {}

    def __len__(self) -> int:
        return 16

    @overload
    def __getitem__(self, index: int) -> pl.Series: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[pl.Series]: ...
    def __getitem__(self, index: int | slice) -> pl.Series | Sequence[pl.Series]:
        if isinstance(index, slice):
            return [self[i] for i in range(16)[index]]
        if not -16 <= index < 16:
            raise IndexError(index)
        index %= 16
        if index not in self._taken:
            self._taken[index] = self._words.gather_every(16, offset=index)
        return self._taken[index]


_SHA512_BLOCK = 128  # bytes: HMAC pads its key to the hash's block size (RFC 2104)


def _hmac_sha512_states(key: bytes) -> tuple[hashlib._Hash, hashlib._Hash]:
    """SHA-512 states having absorbed the key XOR ipad and the key XOR opad (RFC 2104, section 2):
    HMAC(key, m) = H(key ^ opad || H(key ^ ipad || m))."""
    if len(key) > _SHA512_BLOCK:
        key = hashlib.sha512(key).digest()
    key = key.ljust(_SHA512_BLOCK, b"\0")
    return (hashlib.sha512(bytes(b ^ 0x36 for b in key)),
            hashlib.sha512(bytes(b ^ 0x5C for b in key)))


def uniforms(key: bytes, messages: list[str]) -> Uniforms:
    """Sixteen 32-bit unsigned integers per message, from HMAC-SHA512 under the key (`Uniforms`).

    HMAC is computed from two SHA-512 states that have absorbed the padded key, copied for each
    message: the same digests as `hmac.digest(key, message, "sha512")` (a test checks it) at
    60 % of the time of `hmac`'s own copied state and 40 % of its one-shot call (a cell's noise is
    one HMAC a published count, thousands in a large answer; bench in docs/benchmarks.md). The
    words are read by Arrow from the digests' bytes rather than unpacked into Python integers."""
    inner, outer = _hmac_sha512_states(key)
    new_inner, new_outer = inner.copy, outer.copy
    digests = bytearray()
    for message in messages:
        step = new_inner()
        step.update(message.encode())
        mac = new_outer()
        mac.update(step.digest())
        digests += mac.digest()
    count = 16 * len(messages)
    if sys.byteorder == "little":  # Arrow's words are the platform's: little-endian, as the draws are defined
        flat = pl.Series(pa.Array.from_buffers(pa.uint32(), count, [None, pa.py_buffer(bytes(digests))]))
    else:
        flat = pl.Series(struct.unpack(f"<{count}I", digests), dtype=pl.UInt32)
    return Uniforms(flat)


class Draws:
    """The uniforms of each time level of a set of cells (`cells.Seeds`), with each row's weight
    at that level: what `noisy` draws a row's noise from."""

    def __init__(self, levels: Sequence[tuple[Uniforms, pl.Series]]) -> None:
        self.levels = list(levels)


def draws(key: bytes, seeds: Seeds) -> Draws:
    """The uniforms of every level's descriptions under the key. A row without a level (weight 0)
    has the empty description there, whose words are never read with a weight."""
    return Draws([(uniforms(key, messages), weights) for messages, weights in seeds.levels])


def summed_std(params: PrivacyParams, measure: str, cap: pl.Expr) -> pl.Expr:
    """The noise standard deviation of a summed measure for a cap column."""
    epsilon = params.summed_epsilon(measure)
    if math.isinf(epsilon):
        return cap * 0.0
    alpha = (-epsilon / cap.cast(pl.Float64)).exp()
    return (2.0 * alpha).sqrt() / (1.0 - alpha)


def unit_noise(drawn: Draws, measure: str) -> pl.Series:
    """Each row's noise of variance 1 from the measure's slot: the sum over its time levels of
    weight x a Laplace draw of variance 1 (the difference of two exponential draws over sqrt 2)."""
    slot = _SLOTS[measure]
    columns: dict[str, pl.Series] = {}
    unit = []
    for index, (words, weights) in enumerate(drawn.levels):
        columns[f"a{index}"] = words[2 * slot].cast(pl.Float64)
        columns[f"b{index}"] = words[2 * slot + 1].cast(pl.Float64)
        columns[f"w{index}"] = weights
        laplace = (((pl.col(f"b{index}") + 0.5) / _U32).log() - ((pl.col(f"a{index}") + 0.5) / _U32).log()) \
            / math.sqrt(2.0)
        unit.append(pl.when(pl.col(f"w{index}") > 0).then(pl.col(f"w{index}") * laplace).otherwise(0.0))
    return pl.DataFrame(columns).select(pl.sum_horizontal(unit).alias("unit")).to_series()


def noisy(params: PrivacyParams, true: pl.Series, measure: str, drawn: Draws,
          cap: pl.Series | None = None, alpha: float | None = None, layer: pl.Series | None = None) -> pl.Series:
    """True values plus noise, rounded to whole numbers and clipped at 0. The noise of a row is
    `unit_noise` (the sum over its time levels of weight x a Laplace draw from the level's words in
    the measure's slot) scaled to variance sigma^2 - 1/12 (rounding adds the 1/12), where sigma is
    the s.d. of two-sided geometric noise with parameter `alpha`, or per row from `cap` (summed
    measures), or the measure's (`geometric_std`: the s.d. the intervals and margins read); plus
    `layer` (user counts of cells restricted to places: `layers.place_layers`) before rounding."""
    true = true.fill_null(0).cast(pl.Int64)
    if cap is not None:
        epsilon = params.summed_epsilon(measure)
        if math.isinf(epsilon):
            return true.clip(lower_bound=0)
        sigma: pl.Expr = summed_std(params, measure, pl.col("cap"))
    else:
        alpha = params.alpha(measure) if alpha is None else alpha
        if alpha == 0.0:  # infinite epsilon: no noise
            return true.clip(lower_bound=0)
        sigma = pl.lit(geometric_std(alpha))
    if measure.endswith(PILOT):
        # A pilot sum is never published; it sets the cap, whose rule was fitted to a single
        # Laplace-shaped draw: its range's own draw alone (level 0, weight 1).
        drawn = Draws([(drawn.levels[0][0], pl.repeat(1.0, true.len(), dtype=pl.Float64, eager=True))])
    columns: dict[str, pl.Series] = {"t": true, "u": unit_noise(drawn, measure),
                                     **({"cap": cap} if cap is not None else {})}
    # Rounding adds about 1/12 to the variance (Sheppard): the Laplace draws leave room for it.
    noise = (sigma.pow(2) - 1.0 / 12.0).clip(lower_bound=0.0).sqrt() * pl.col("u")
    if layer is not None:
        columns["l"] = layer
        noise = noise + pl.col("l")
    return pl.DataFrame(columns).select(
        (pl.col("t") + noise.round(0).cast(pl.Int64)).clip(lower_bound=0).alias("noisy")
    ).to_series()
