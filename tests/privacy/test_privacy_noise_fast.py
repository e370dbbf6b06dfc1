"""The noise's fast paths (service/privacy/noise.py `distinct_uniforms`, `draws` over
`Seeds.repeats`, layers.py drawing a place once) give byte for byte the words and the noise of the
straightforward computation: one `hmac.digest` per row, every row hashed."""

from __future__ import annotations

import datetime as dt
import hmac
import random
import struct

import polars as pl
import pytest

from service.api.windows import TimeRange
from service.privacy import noise
from service.privacy.cells import CellContext, Published, Seeds, cell_seeds
from service.privacy.layers import _place_draws
from service.privacy.params import UNIQUE_USERS, PrivacyParams

END = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def straightforward(key: bytes, messages: list[str]) -> list[list[int]]:
    """The 16 little-endian words of each message's HMAC-SHA512, one `hmac.digest` a row."""
    rows = [struct.unpack("<16I", hmac.digest(key, message.encode(), "sha512")) for message in messages]
    return [[row[i] for row in rows] for i in range(16)]


def random_messages(rng: random.Random, count: int) -> list[str]:
    pool = ["", "é|ü", *(f"v3|suppressions|T{rng.randint(1, 10)}|{rng.randint(0, 9)}/{rng.randint(0, 9)}|city=1:1:"
                         + rng.choice("abcdef") * rng.randint(1, 150) for _ in range(rng.randint(1, 40)))]
    return [rng.choice(pool) for _ in range(count)]


@pytest.mark.parametrize("seed", range(12))
def test_distinct_uniforms_are_the_words_of_every_rows_own_hmac(seed):
    rng = random.Random(seed)
    key = noise.noise_key(f"secret {seed}") if seed % 2 else bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
    messages = random_messages(rng, rng.choice([0, 1, 2, 17, 300]))
    expected = straightforward(key, messages)
    series = pl.Series(messages, dtype=pl.String)
    assert [words.to_list() for words in noise.distinct_uniforms(key, series)] == expected
    assert [words.to_list() for words in noise.uniforms(key, series)] == expected
    assert [words.to_list() for words in noise.uniforms(key, messages)] == expected
    for words in noise.distinct_uniforms(key, series):
        assert words.dtype == pl.UInt32 and words.len() == len(messages)


@pytest.mark.parametrize("seed", range(6))
def test_draws_looking_for_repeats_give_the_same_noise_as_hashing_every_row(seed):
    rng = random.Random(seed)
    key = noise.noise_key("s")
    count = 500
    levels = tuple((pl.Series(random_messages(rng, count), dtype=pl.String),
                    pl.Series([rng.choice([0.0, 0.5, 0.7071]) for _ in range(count)], dtype=pl.Float64))
                   for _ in range(4))
    fast = noise.draws(key, Seeds(levels, repeats=True))
    plain = noise.draws(key, Seeds(levels, repeats=False))
    for measure in ("unique_users", "suppressions", "events", "keyword_count"):
        assert noise.unit_noise(fast, measure).to_list() == noise.unit_noise(plain, measure).to_list()
    for (fast_words, _w), (messages, _weights) in zip(fast.levels, levels, strict=True):
        assert [words.to_list() for words in fast_words] == straightforward(key, messages.to_list())


@pytest.mark.parametrize(("bucketed", "seed"), [(False, 1), (True, 2), (True, 3)])
def test_a_place_drawn_once_is_the_same_draw_in_every_row_that_holds_it(bucketed, seed):
    rng = random.Random(seed)
    params, key = PrivacyParams(), noise.noise_key("s")
    places = [f"town {i}" for i in range(30)] + [None]
    hours = [END - dt.timedelta(hours=h) for h in range(1, 49)]
    rows = pl.DataFrame({"city": [rng.choice(places) for _ in range(2_000)]}, schema={"city": pl.String})
    if bucketed:
        rows = rows.with_columns(pl.Series("ts", [rng.choice(hours) for _ in range(rows.height)]))
    window = TimeRange(END - dt.timedelta(days=2), END)
    cell = CellContext(table="suppressions", dims=("city", "ts") if bucketed else ("city",), published=(),
                       time_range=window, bucket="hour" if bucketed else None, versions={window.start.date(): 2})
    published = Published("unique_users", UNIQUE_USERS, "unique_users")
    fast = _place_draws(key, rows, "city", cell, published, params)
    # Straightforward: every row's own descriptions, every row hashed.
    context = CellContext(table="suppressions|place", dims=cell.dims, published=(), time_range=window,
                          bucket=cell.bucket)
    seeds = cell_seeds(rows, context, Published(column="", measure=UNIQUE_USERS, users=""), params)
    levels = tuple((pl.Series(messages, dtype=pl.String), weights) for messages, weights in seeds.levels)
    for (messages, _w), (own, _weights) in zip(levels, seeds.messages, strict=True):
        assert own.to_list() == messages.to_list()
    drawn = noise.Draws([(noise.uniforms(key, messages.to_list()), weights) for messages, weights in levels])
    assert fast.to_list() == noise.unit_noise(drawn, UNIQUE_USERS).to_list()
