"""The public domain of each table: the cells the release publishes, fixed before any event is
read. Whether a cell exists in the release, or a filter value is accepted, never depends on the
store (a store-derived list told whether anyone in a town was in the data).

- keywords: the shipped keyword list (`vocabulary/keywords.txt`, normalised as the event contract
  normalises keywords); domains: the shipped site list (`vocabulary/domains.txt`);
- platforms, page contexts: the event contract's values (`service.store.schema`);
- places: the geographic reference the ingest contract checks against (`service.geo`: ISO 3166-1
  countries, ISO 3166-2 regions, US county FIPS codes, GeoNames city ids).

A value outside its domain is kept in the store (it is valid data) and released nowhere.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from service.release.menu import Table
from service.store import schema

VOCABULARY = Path(__file__).resolve().parent / "vocabulary"


def _listed(name: str) -> tuple[str, ...]:
    lines = (line.strip() for line in (VOCABULARY / name).read_text(encoding="utf-8").splitlines())
    return tuple(sorted(dict.fromkeys(line for line in lines if line and not line.startswith("#"))))


@functools.cache
def values(dimension: str) -> tuple[str, ...]:
    """The public values of a dimension, sorted (the order noise is drawn in)."""
    if dimension == "keyword":
        return _listed("keywords.txt")
    if dimension == "domain":
        return _listed("domains.txt")
    if dimension == "platform":
        return tuple(sorted(schema.PLATFORMS))
    if dimension == "page_context":
        return tuple(sorted(schema.PAGE_CONTEXTS))
    if dimension == "action":
        return tuple(sorted(schema.ACTIONS))
    # Imported on first use: the reference is built in the process that needs it.
    from service import geo

    places: dict[str, Callable[[], Iterable[str]]] = {
        "country": geo.country_codes, "region": geo.region_countries,
        "county": geo.county_regions, "city": geo.city_countries}
    if dimension not in places:
        raise KeyError(f"no public domain for {dimension!r}")
    return tuple(sorted(places[dimension]()))


@functools.cache
def _value_sets(dimension: str) -> frozenset[str]:
    return frozenset(values(dimension))


def domain(table: Table) -> tuple[str, ...]:
    return values(table.dimension)


@functools.cache
def series(dimension: str) -> pl.Series:
    """`values(dimension)` as a String Series (filters use it: a tuple would be converted each time)."""
    return pl.Series(dimension, values(dimension), dtype=pl.String)


def is_public(dimension: str, value: str) -> bool:
    """Whether `value` is in the public domain of `dimension` (a filter value is checked here)."""
    return value in _value_sets(dimension)
