"""Consistent noise (the package docstring, point 1): each cell's description hashed under the
secret gives uniform numbers, each pair of them one draw of two-sided geometric ("discrete
Laplace") noise."""

from __future__ import annotations

import hashlib
import hmac
import math
import struct
import sys
from collections.abc import Callable, Iterable, Sequence
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
    """The key the cell descriptions are hashed under, derived from the secret (never empty: an
    empty one would be a key anyone knows)."""
    if not secret:
        raise ValueError("the noise secret must not be empty (SIGNALS_SECRET)")
    return hmac.digest(secret.encode(), _NOISE_DOMAIN, "sha256")


def noise_key_fingerprint(secret: str) -> str:
    """A short, non-reversible fingerprint of the noise key (for logs: which secret is in use)."""
    return hashlib.sha256(noise_key(secret)).hexdigest()[:8]


class Uniforms(Sequence[pl.Series]):
    """Sixteen UInt32 series, the i-th holding each message's i-th little-endian word of its
    digest; each taken from the digests when first read (a draw reads two of them). With `index`,
    the digests are those of distinct messages and row r reads digest index[r] (`draws`)."""

    def __init__(self, words: pl.Series, index: pl.Series | None = None) -> None:
        self._words = words  # every message's 16 words, one message after the other
        self._index = index
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
            words = self._words.gather_every(16, offset=index)
            self._taken[index] = words if self._index is None else words.gather(self._index)
        return self._taken[index]


_SHA512_BLOCK = 128  # bytes: HMAC pads its key to the hash's block size (RFC 2104)


def _sha512_constructor() -> Callable[[bytes], hashlib._Hash]:
    """hashlib's built-in SHA-512 (CPython's own module, which hashlib falls back to without
    OpenSSL) where the interpreter has it, else hashlib.sha512 (OpenSSL): the same digests, and
    for a cell's short description the built-in one's state is copied, fed and finished in about
    0.7 of the time (no OpenSSL context to allocate at each copy and digest; 0.79 against 1.08 us an
    HMAC, docs/benchmarks.md section 24), which is most of the stage's time once a cell takes four."""
    builtin = getattr(hashlib, "__get_builtin_constructor", None)
    if builtin is not None:
        try:
            constructor: Callable[[bytes], hashlib._Hash] = builtin("sha512")
            return constructor
        except ValueError:  # built without it
            pass
    return hashlib.sha512


_SHA512 = _sha512_constructor()


def _hmac_sha512_states(key: bytes) -> tuple[hashlib._Hash, hashlib._Hash]:
    """SHA-512 states having absorbed the key XOR ipad and the key XOR opad (RFC 2104, section 2):
    HMAC(key, m) = H(key ^ opad || H(key ^ ipad || m))."""
    if len(key) > _SHA512_BLOCK:
        key = hashlib.sha512(key).digest()
    key = key.ljust(_SHA512_BLOCK, b"\0")
    return (_SHA512(bytes(b ^ 0x36 for b in key)),
            _SHA512(bytes(b ^ 0x5C for b in key)))


def _digests(key: bytes, messages: Iterable[bytes]) -> bytes:
    """Each message's HMAC-SHA512 under the key, one after the other."""
    inner, outer = _hmac_sha512_states(key)
    new_inner, new_outer = inner.copy, outer.copy
    digests = bytearray()
    for message in messages:
        step = new_inner()
        step.update(message)
        mac = new_outer()
        mac.update(step.digest())
        digests += mac.digest()
    return bytes(digests)


def uniforms(key: bytes, messages: list[str] | pl.Series) -> Uniforms:
    """Sixteen 32-bit unsigned integers per message, from HMAC-SHA512 under the key (`Uniforms`).

    HMAC is computed from two SHA-512 states (hashlib's, `_sha512_constructor`) that have absorbed
    the padded key, copied for each message: the same digests as `hmac.digest(key, message,
    "sha512")` (tests check it) at 60 % of the time of `hmac`'s own copied state and 40 % of its
    one-shot call (a cell's noise is up to four HMACs, its range's and three time levels', hundreds
    of thousands in a large answer; docs/benchmarks.md section 24). The words are read by Arrow
    from the digests' bytes rather than unpacked into Python integers; a String series is taken as
    its UTF-8 bytes (no `str.encode` each). Rows that share a message: `distinct_uniforms`."""
    if isinstance(messages, pl.Series):
        encoded: Iterable[bytes] = messages.cast(pl.Binary).to_list()
    else:
        encoded = (message.encode() for message in messages)
    digests = _digests(key, encoded)
    count = len(digests) // 4
    if sys.byteorder == "little":  # Arrow's words are the platform's: little-endian, as the draws are defined
        flat = pl.Series(pa.Array.from_buffers(pa.uint32(), count, [None, pa.py_buffer(digests)]))
    else:
        flat = pl.Series(struct.unpack(f"<{count}I", digests), dtype=pl.UInt32)
    return Uniforms(flat)


def distinct_uniforms(key: bytes, messages: pl.Series) -> Uniforms:
    """`uniforms(key, messages)`, each distinct message hashed once: the same words row for row
    (a message's words depend on the message alone), for rows that share descriptions (a place's
    layer in every row of that place, the blocks two buckets share, the empty description)."""
    if messages.len() < 2 or messages.n_unique() == messages.len():
        return uniforms(key, messages)
    distinct = messages.unique().rename("m")
    index = messages.rename("m").to_frame().join(
        distinct.to_frame().with_row_index("i"), on="m", how="left", maintain_order="left", nulls_equal=True,
    ).get_column("i")
    hashed = uniforms(key, distinct)
    return Uniforms(hashed._words, index)


class Draws:
    """The uniforms of each time level of a set of cells (`cells.Seeds`), with each row's weight
    at that level: what `noisy` draws a row's noise from."""

    def __init__(self, levels: Sequence[tuple[Uniforms, pl.Series]]) -> None:
        self.levels = list(levels)


def draws(key: bytes, seeds: Seeds) -> Draws:
    """The uniforms of every level's descriptions under the key. A row without a level (weight 0)
    has the empty description there, whose words are never read with a weight. Where rows may
    share descriptions (`Seeds.repeats`), each distinct one is hashed once (`distinct_uniforms`)."""
    take = distinct_uniforms if seeds.repeats else uniforms
    return Draws([(take(key, messages), weights) for messages, weights in seeds.messages])


def summed_std(params: PrivacyParams, measure: str, cap: pl.Expr, in_family: bool = False) -> pl.Expr:
    """The noise standard deviation of a summed measure for a cap column (cells in a family or not:
    `PrivacyParams.summed_epsilon`)."""
    epsilon = params.summed_epsilon(measure, in_family)
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
          cap: pl.Series | None = None, alpha: float | None = None, layer: pl.Series | None = None,
          in_family: bool = False) -> pl.Series:
    """True values plus noise, rounded to whole numbers and clipped at 0. The noise of a row is
    `unit_noise` (the sum over its time levels of weight x a Laplace draw from the level's words in
    the measure's slot) scaled to variance sigma^2 - 1/12 (rounding adds the 1/12), where sigma is
    the s.d. of two-sided geometric noise with parameter `alpha`, or per row from `cap` (summed
    measures; `in_family`: the cells are in a family, `PrivacyParams.summed_epsilon`), or the
    measure's (`geometric_std`: the s.d. the intervals and margins read); plus `layer` (user counts
    of cells restricted to places: `layers.place_layers`) before rounding."""
    true = true.fill_null(0).cast(pl.Int64)
    if cap is not None:
        epsilon = params.summed_epsilon(measure, in_family)
        if math.isinf(epsilon):
            return true.clip(lower_bound=0)
        sigma: pl.Expr = summed_std(params, measure, pl.col("cap"), in_family)
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
