"""GET /geo-heat in the engine: per-unit measures, null levels left out, labels, order."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import service.geo
from service.api.windows import window_range
from service.engine.requests import GeoHeat
from service.privacy import Privacy
from service.store.reader import build_frames
from tests.support import fixture_data as fx
from tests.support.engines import Engine

# Every test here runs against both engines (tests/engine/conftest.py engine_kind).
pytestmark = pytest.mark.usefixtures("engine_kind")

SCHEMA = {
    "geo_key": pl.String,
    "label": pl.String,
    "suppressions": pl.Int64,
    "unique_users": pl.Int64,
    "keyword_count": pl.Int64,
}


@pytest.fixture(scope="module")
def frames():
    return fx.fixture_frames()


def run(frames, window: str, level: str) -> pl.DataFrame:
    return Engine(Privacy.exact()).geo_heat(frames, fx.FIXTURE_AS_OF, GeoHeat(window=window, level=level))


def naive(window: str, level: str) -> pl.DataFrame:
    suppressions: dict[str, int] = defaultdict(int)
    users: dict[str, set[int]] = defaultdict(set)
    keywords: dict[str, set[str]] = defaultdict(set)
    for row in fx.rows_in(fx.suppression_rows(), window_range(window, fx.FIXTURE_AS_OF)):
        key = row[level]
        if key is None:
            continue
        suppressions[key] += row["suppressions"]
        users[key].add(row["user_id"])
        keywords[key].add(row["keyword"])
    keys = sorted(suppressions, key=lambda key: (-suppressions[key], key))
    return pl.DataFrame(
        {
            "geo_key": keys,
            "label": service.geo.labels(level, keys),
            "suppressions": [suppressions[k] for k in keys],
            "unique_users": [len(users[k]) for k in keys],
            "keyword_count": [len(keywords[k]) for k in keys],
        },
        schema=SCHEMA,
    )


def test_countries_24h_match_the_hand_computed_heat(frames) -> None:
    expected = pl.DataFrame(
        [(key, service.geo.labels("country", [key])[0], *rest) for key, *rest in fx.EXPECTED_GEO_COUNTRIES_24H],
        schema=SCHEMA,
        orient="row",
    )
    assert_frame_equal(run(frames, "24h", "country"), expected)
    assert_frame_equal(naive("24h", "country"), expected)


@pytest.mark.parametrize("window", ["1h", "6h", "12h", "24h", "7d", "30d"])
@pytest.mark.parametrize("level", ["country", "region", "county", "city"])
def test_every_level_and_window_matches_a_naive_count(frames, window: str, level: str) -> None:
    assert_frame_equal(run(frames, window, level), naive(window, level))


def test_units_without_that_level_are_left_out(frames) -> None:
    # GB events carry no region, county or city; Berlin has no county.
    assert run(frames, "24h", "region").get_column("geo_key").to_list() == ["US-CA", "US-NY", "DE-BE"]
    assert run(frames, "24h", "county").get_column("geo_key").to_list() == ["06037", "36061"]
    assert sorted(run(frames, "24h", "city").get_column("geo_key").to_list()) == ["2950159", "5128581", "5368361"]


def test_labels_come_from_service_geo_for_the_output_keys(frames, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def fake_labels(level, keys):
        calls.append((level, list(keys)))
        return [f"<{level}:{key}>" for key in keys]

    monkeypatch.setattr(service.geo, "labels", fake_labels)
    result = run(frames, "24h", "county")
    assert calls == [("county", ["06037", "36061"])]
    assert result.get_column("label").to_list() == ["<county:06037>", "<county:36061>"]


def test_real_labels_are_display_names(frames) -> None:
    labels = dict(run(frames, "24h", "city").select("geo_key", "label").rows())
    assert labels["5368361"].startswith("Los Angeles")
    assert labels["2950159"].startswith("Berlin")


def test_one_user_moves_keyword_count_by_at_most_the_cap() -> None:
    """A user with many keywords nobody else uses adds at most keyword_rows_per_user of them."""
    from service.privacy import PrivacyParams

    base = fx.suppressions_frame()
    row = base.filter(pl.col("country") == "DE").head(1)
    flood = pl.concat([
        row.with_columns(pl.lit(f"only mine {i}").alias("keyword"), pl.lit(999_999, dtype=pl.UInt64).alias("user_id"),
                         (pl.col("ts") + pl.duration(seconds=i)).alias("ts"))
        for i in range(100)
    ])
    params = PrivacyParams.exact()
    capped = Privacy("exact", dataclasses.replace(params, keyword_rows_per_user=7))
    frames = build_frames(pl.concat([base, flood]), fx.keyword_changes_frame(), 1)
    without = Engine(capped).geo_heat(fx.fixture_frames(), fx.FIXTURE_AS_OF, GeoHeat("30d", "country"))
    with_flood = Engine(capped).geo_heat(frames, fx.FIXTURE_AS_OF, GeoHeat("30d", "country"))
    count = lambda frame: frame.filter(pl.col("geo_key") == "DE")["keyword_count"][0]  # noqa: E731
    assert count(with_flood) - count(without) == 7
    assert PrivacyParams().sensitivity("keyword_count") == PrivacyParams().keyword_rows_per_user
