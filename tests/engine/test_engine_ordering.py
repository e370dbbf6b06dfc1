"""first_rows: partial top-k selection, then sort, equals a full sort and head."""

from __future__ import annotations

import random

import polars as pl
import pytest

from service.engine.ordering import first_rows


def _cells(seed: int, n: int) -> pl.DataFrame:
    rng = random.Random(seed)
    # many ties on the measure; (measure, keyword, day) identifies a row
    keys = {(rng.randint(0, 5), rng.choice("abcdefghij") * rng.randint(1, 3), rng.randint(1, 28)) for _ in range(n)}
    return pl.DataFrame(sorted(keys), schema={"events": pl.Int64, "keyword": pl.String, "day": pl.Int64}, orient="row").sample(
        fraction=1.0, shuffle=True, seed=seed
    )


@pytest.mark.parametrize("descending", [[True, False, False], [False, False, False], [True, True, False]])
@pytest.mark.parametrize("limit", [1, 7, 50, 10_000])
def test_equals_python_sorted_and_sliced(descending: list[bool], limit: int) -> None:
    frame = _cells(limit, 400)
    by = ["events", "keyword", "day"]

    def key(row: tuple) -> tuple:
        # negate numbers for descending; strings descending via a reversed comparison wrapper
        return tuple(
            (-value if flag else value) if isinstance(value, int) else (_Reversed(value) if flag else value)
            for value, flag in zip(row, descending, strict=True)
        )

    expected = sorted(frame.rows(), key=key)[:limit]
    assert first_rows(frame, by, descending, limit).rows() == expected


class _Reversed:
    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.value == other.value


def test_empty_frame() -> None:
    frame = pl.DataFrame(schema={"events": pl.Int64, "keyword": pl.String})
    assert first_rows(frame, ["events", "keyword"], [True, False], 5).height == 0
