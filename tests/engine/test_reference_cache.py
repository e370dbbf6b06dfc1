"""Reference tables kept derived on disk (service/geo/reference_cache.py) and the geography read from
them (service/geo/__init__.py): the same tables as derived afresh, and a cache that can only help."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from service import geo
from service.geo import reference_cache


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "signals" / "reference"


SCHEMA = {"key": pl.String, "value": pl.Int64}


def _builder(calls: list[int], value: int = 1):
    def build() -> pl.DataFrame:
        calls.append(value)
        return pl.DataFrame({"key": ["a", "b"], "value": [value, value + 1]})
    return build


def test_a_table_is_derived_once_then_read(cache_home: Path) -> None:
    calls: list[int] = []
    first = reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))
    again = reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))
    assert calls == [1]
    assert_frame_equal(first, again)
    (kept,) = cache_home.iterdir()
    assert kept.name.startswith("t-") and kept.suffix == ".arrow"


def test_a_new_library_version_derives_a_new_table(cache_home: Path) -> None:
    calls: list[int] = []
    reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls, 1))
    newer = reference_cache.cached_frame("t", {"lib": "1.1"}, SCHEMA, _builder(calls, 5))
    assert calls == [1, 5] and newer["value"].to_list() == [5, 6]
    assert len(list(cache_home.iterdir())) == 2


def test_an_unreadable_file_is_derived_again_and_replaced(cache_home: Path) -> None:
    calls: list[int] = []
    reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))
    (kept,) = cache_home.iterdir()
    kept.write_bytes(kept.read_bytes()[:40])  # cut short
    assert reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))["value"].to_list() == [1, 2]
    assert reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))["value"].to_list() == [1, 2]
    assert calls == [1, 1]  # derived again once, then read from the replaced file


@pytest.mark.parametrize("other", [
    pl.DataFrame({"geonameid": ["1"], "country": ["US"]}),  # another table's columns
    pl.DataFrame({"value": [7], "key": ["z"]}),  # the columns in another order
    pl.DataFrame({"key": ["z"], "value": [7.0]}),  # another type
])  # fmt: skip
def test_a_file_with_other_columns_is_derived_again(cache_home: Path, other: pl.DataFrame) -> None:
    calls: list[int] = []
    reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))
    (kept,) = cache_home.iterdir()
    other.write_ipc(kept)
    again = reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))
    assert calls == [1, 1] and again.schema == pl.Schema(SCHEMA)
    assert reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))["value"].to_list() == [1, 2]
    assert calls == [1, 1]  # replaced: read from the file again


def test_another_schema_is_another_file(cache_home: Path) -> None:
    calls: list[int] = []
    reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls))
    reference_cache.cached_frame("t", {"lib": "1.0"}, {"key": pl.String, "value": pl.Int32},
                                 lambda: pl.DataFrame({"key": ["a"], "value": [1]}, schema={"key": pl.String,
                                                                                              "value": pl.Int32}))
    assert len(list(cache_home.iterdir())) == 2


def test_a_cache_path_with_glob_characters_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "odd[1]*dir?"))
    calls: list[int] = []
    for _ in range(3):
        assert reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls)).height == 2
    assert calls == [1]


def test_kept_files_are_readable_by_others(cache_home: Path) -> None:
    reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder([]))
    (kept,) = cache_home.iterdir()
    assert kept.stat().st_mode & 0o777 == 0o644


def test_an_unwritable_cache_still_gives_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/self")  # no directory can be made there, not even by root
    calls: list[int] = []
    assert reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls)).height == 2
    assert reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls)).height == 2
    assert calls == [1, 1]


def test_a_cache_path_that_is_a_file_still_gives_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "signals").write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list[int] = []
    assert reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder(calls)).height == 2
    assert calls == [1]


def test_no_half_written_file_is_left(cache_home: Path) -> None:
    reference_cache.cached_frame("t", {"lib": "1.0"}, SCHEMA, _builder([]))
    assert [p.name for p in cache_home.iterdir() if not p.name.endswith(".arrow")] == []


def test_the_cache_follows_xdg_cache_home(cache_home: Path) -> None:
    assert reference_cache.cache_dir() == cache_home


def test_geography_read_from_the_cache_equals_the_libraries(cache_home: Path) -> None:
    """A process reading the kept tables gets the lookups a process deriving them gets."""
    builders = (geo._subdivision_table, geo._city_table, geo._subdivisions, geo._cities, geo.city_countries,
                geo.city_regions, geo.region_countries, geo._label_table, geo._cities_by_population)

    def lookups() -> tuple:
        for builder in builders:
            builder.cache_clear()
        return (dict(geo.city_countries()), dict(geo.city_regions()), dict(geo.region_countries()),
                geo.cities()[:50], geo.labels("city", ["5368361", "2643743"]), geo.labels("region", ["US-CA"]))

    derived = lookups()
    assert {p.name.split("-")[0] for p in cache_home.iterdir()} == {"cities", "subdivisions"}
    read = lookups()  # from the files now
    for builder in builders:
        builder.cache_clear()
    assert read == derived
    assert_frame_equal(geo._city_table(), geo._derive_city_table())
    assert derived[4] == ["Los Angeles, US", "London, GB"]


def test_the_city_table_holds_a_city_per_row() -> None:
    assert list(geo._CITY_SCHEMA) == [f.name for f in geo.dataclasses.fields(geo.City)]
    la = geo._cities()["5368361"]
    assert (la.name, la.country, la.region, la.county) == ("Los Angeles", "US", "US-CA", "06037")
