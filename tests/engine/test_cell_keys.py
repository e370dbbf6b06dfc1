"""One grouping key per (cell, user) (engine/polars/cell_keys.py) and the users' spare bits it relies on
(engine/polars/user_keys.py): the same groups as grouping by the columns, so the same answers."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as dt
import json
import multiprocessing
import time
from pathlib import Path

import polars as pl
import pytest

from service.demo.generate import generate_demo
from service.engine.polars import PolarsEngine, user_keys
from service.engine.polars.cell_keys import Packing
from service.engine.polars.contributions import cell_contributions
from service.engine.polars.user_keys import known_bits, learn, spare_bits
from service.engine.requests import Trending
from service.privacy import Privacy, PrivacyParams
from service.store import schema
from service.store.encoding import encode
from service.store.reader import EventStore
from tests.support.fixture_data import FIXTURE_NOW

PARAMS = PrivacyParams()


def canonical(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in a fixed order, dimensions as strings (Enums compare by code)."""
    frame = frame.with_columns(pl.col(c).cast(pl.String) for c, t in frame.schema.items() if isinstance(t, pl.Enum))
    return frame.sort(frame.columns, nulls_last=True)


def hashed(rows: pl.DataFrame) -> pl.DataFrame:
    """The fixture's users (numbered 1, 2, ...) as 64-bit hashes, as a store holds them."""
    return rows.with_columns(pl.col("user_id").hash(7))


def both_ways(rows: pl.DataFrame, keys: list[str], bits: int, **extra):
    packed = cell_contributions(rows, keys, PARAMS, user_bits=bits, **extra)
    plain = cell_contributions(rows, keys, PARAMS, **extra)
    return packed, plain


def test_spare_bits_is_what_no_two_users_share() -> None:
    assert spare_bits(pl.Series([0, 1 << 20], dtype=pl.UInt64)) == 20  # they differ first at bit 20
    assert spare_bits(pl.Series([(1 << 63) | 5, (1 << 63) | 4, 7], dtype=pl.UInt64)) == 0  # 5 ^ 4 = 1
    assert spare_bits(pl.Series([9, 9, 9 | (1 << 12)], dtype=pl.UInt64)) == 12  # repeats are one user
    assert spare_bits(pl.Series([3], dtype=pl.UInt64)) == 63
    assert spare_bits(pl.Series([1, None], dtype=pl.UInt64)) == 0  # a row without a user: never packed


def test_spare_bits_gathers_the_distinct_ids_in_chunks_alike(monkeypatch) -> None:
    ids = pl.Series([5, 1 << 40, 5, 3 << 20, 1 << 40, (3 << 20) | (1 << 9), 7 << 50], dtype=pl.UInt64)
    whole = spare_bits(ids)
    monkeypatch.setattr(user_keys, "CHUNK_ROWS", 2)
    assert spare_bits(ids) == whole == 9  # (3 << 20) and (3 << 20) | 2^9 differ first at bit 9


@pytest.mark.parametrize("keys", [["keyword"], ["city"], ["county"], ["country", "platform"], ["domain", "region"]])
def test_packed_grouping_gives_the_plain_groups(fixture_store, keys) -> None:
    rows = hashed(fixture_store.snapshot().suppressions)
    bits = spare_bits(rows.get_column("user_id"))
    assert Packing.of(rows.schema, keys, bits) is not None, "the fixture's codes fit: the test would test nothing"
    (cells, contributions), (plain_cells, plain_contributions) = both_ways(rows, keys, bits)
    assert canonical(cells).equals(canonical(plain_cells))
    assert canonical(contributions.per_user).equals(canonical(plain_contributions.per_user))
    assert canonical(contributions.totals).equals(canonical(plain_contributions.totals))
    if "city" in keys:  # null cities (rows located to a coarser level) are a cell of their own, as before
        assert cells.get_column("city").null_count() == 1


def test_packed_grouping_keeps_each_users_rows_in_order(fixture_store) -> None:
    """geo-heat's per-user extra (a user's first keywords) sees the same rows in the same order."""
    rows = hashed(fixture_store.snapshot().suppressions)
    bits = spare_bits(rows.get_column("user_id"))
    first = [pl.col("keyword").head(2).alias("_k")]
    count = [pl.col("_k").explode().n_unique().cast(pl.Int64).alias("keyword_count")]
    (cells, _), (plain, _) = both_ways(rows, ["city"], bits, per_user_extra=first, per_cell_extra=count)
    assert canonical(cells).equals(canonical(plain))


def test_no_packing_where_the_codes_do_not_fit_or_a_key_is_no_column(fixture_store) -> None:
    rows = fixture_store.snapshot().suppressions
    assert Packing.of(rows.schema, ["keyword"], 0) is None
    assert Packing.of(rows.schema, ["keyword", "domain", "city"], 8) is None
    assert Packing.of(rows.schema, [pl.col("ts").dt.truncate("1d")], 30) is None  # a time bucket
    assert Packing.of(rows.schema, [], 30) is None  # totals: one cell


def test_users_that_share_their_high_bits_are_never_merged() -> None:
    """Two users whose ids differ only in the lowest bit: no bits to spare, so they stay two. Packed
    with bits the data cannot spare they would be one, which is why the bits are learnt."""
    base = 0xDEADBEEF00000000
    rows = encode(pl.DataFrame({
        "ts": [dt.datetime(2026, 3, 1, tzinfo=dt.UTC)] * 2, "user_id": [base, base | 1], "keyword": ["a", "a"], "domain": ["d.com"] * 2,
        "platform": ["chrome"] * 2, "page_context": ["feed"] * 2, "country": ["US"] * 2, "region": [None] * 2,
        "county": [None] * 2, "city": [None] * 2, "suppressions": [1, 1],
    }, schema=schema.SUPPRESSIONS_SCHEMA), schema.SUPPRESSIONS)
    bits = spare_bits(rows.get_column("user_id"))
    assert bits == 0
    (cells, _), _ = both_ways(rows, ["keyword"], bits)
    assert cells.get_column("unique_users").to_list() == [2]
    (merged, _), _ = both_ways(rows, ["keyword"], 8)
    assert merged.get_column("unique_users").to_list() == [1]


def test_the_bits_are_learnt_in_the_background(fixture_store) -> None:
    stored = fixture_store.snapshot()
    frames = dataclasses.replace(stored, suppressions=hashed(stored.suppressions),
                                 keyword_changes=hashed(stored.keyword_changes))
    first = known_bits(frames)  # not known yet: group by the columns meanwhile
    deadline = time.monotonic() + 10
    while (learnt := known_bits(frames)) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert first in (0, learnt) and learnt == learn(frames) > 0
    # The fixture's own users are numbered 1, 2, ...: neighbours differ in their lowest bits.
    assert learn(stored) == 0


@pytest.mark.parametrize("metric", ["unique_users", "suppressions"])
def test_trending_counts_the_same_users_packed_or_not(fixture_store, metric) -> None:
    """/trending's distinct users per value (unique_users) and its sums, with and without packing."""
    stored = fixture_store.snapshot()
    frames = dataclasses.replace(stored, suppressions=hashed(stored.suppressions),
                                 keyword_changes=hashed(stored.keyword_changes))
    engine = PolarsEngine(Privacy.exact())
    request = Trending("7d", "keyword", metric, 50, 0.0)
    answers = []
    for bits in (learn(frames), 0):
        user_keys._known[frames] = bits
        answers.append(engine.trending(frames, FIXTURE_NOW, request))
    assert answers[0].height > 0 and answers[0].equals(answers[1])


def _learn_in_another_process(data_dir: str, computed: str) -> int:
    """What a web worker does with a new generation, counting its own computations in `computed`."""
    own = user_keys._compute

    def counted(frames):
        with open(computed, "a") as out:
            out.write("x")
        return own(frames)

    user_keys._compute = counted
    return learn(EventStore(Path(data_dir)).snapshot())


def test_one_process_of_the_machine_computes_the_bits_the_others_read_them(tmp_path) -> None:
    """Every process reading a new generation needs the number at once: computed once, under a lock
    in the snapshot's directory, and read there by the others."""
    data_dir = tmp_path / "data"
    generate_demo(data_dir, events=20_000, days=7, seed=3, end=FIXTURE_NOW.replace(minute=0), secret="test",
                  progress=False)
    computed = tmp_path / "computed"
    computed.touch()
    with concurrent.futures.ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as pool:
        answers = list(pool.map(_learn_in_another_process, [str(data_dir)] * 4, [str(computed)] * 4))
    frames = EventStore(data_dir).snapshot()
    assert frames.directory is not None
    assert answers == [spare_bits(frames.suppressions.get_column("user_id"))] * 4 and answers[0] > 0
    assert computed.read_text() == "x"  # one computation for the four
    assert json.loads((frames.directory / user_keys.SHARED).read_text()) == {"bits": answers[0]}


def test_frames_without_a_snapshot_directory_learn_in_process(fixture_store) -> None:
    stored = fixture_store.snapshot()
    frames = dataclasses.replace(stored, suppressions=hashed(stored.suppressions), directory=None)
    assert learn(frames) == spare_bits(frames.suppressions.get_column("user_id"))
