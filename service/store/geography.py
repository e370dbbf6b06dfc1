"""The ingest contract's geography rules, on a file's `Rows` (row_checks.py): country, region,
county and city, each a known key and agreeing with the others (docs/data.md, "The contract").

A county must be of country US, or of the outlying area's own code (e.g. PR), and of the row's
region when one is given; a city in the row's country, and in its region where that is derivable
(the US). The keys and their memberships are `service.geo`'s.
"""

from __future__ import annotations

import functools

import polars as pl

from service import geo
from service.store import schema
from service.store.kinds import map_distinct
from service.store.row_checks import Rows, quoted

_DISTINCT_FROM = 10_000  # rows from which a rule that reads few distinct values runs once per value


def check_country(rows: Rows) -> pl.Expr:
    """Country rule; returns the expression "country is valid" for the geography rules."""
    rows.columns["country"] = rows.text("country").str.to_uppercase()
    country_ok = pl.col("country").is_in(sorted(geo.country_codes()))
    rows.add(
        rows.presence("country", required=True),
        pl.when(country_ok.not_()).then(
            pl.format("country: {} is not an ISO 3166-1 alpha-2 country code", quoted(pl.col("country__raw")))
        ),
    )
    return country_ok


def check_geography(rows: Rows) -> None:
    """country, region, county and city: valid keys that agree with each other.

    The rules read nothing but these four values, and a file holds few combinations of them
    (places), each on many rows: the rules run once per combination and the outcome (clean
    values, reasons) is joined back onto the rows. Not when a column mixes kinds of values
    (`value_kinds`: their kinds are per row), nor when combinations are not repeated."""
    names = [name for name in schema.GEO_LEVELS if name in rows.frame.columns]
    if rows.n < _DISTINCT_FROM or any(name in rows.kinds for name in names):
        return _check_geography_rows(rows)
    places = rows.frame.select(names).unique()
    if places.height * 4 > rows.n:
        return _check_geography_rows(rows)
    per_place = Rows(places, rows.table, text_cells=rows.text_cells, kinds={})
    _check_geography_rows(per_place)
    work = per_place.work_frame()
    reason = pl.concat_str(per_place.reasons, separator="; ", ignore_nulls=True)
    outcome = work.select(
        *(pl.col(name).alias(f"{name}__clean") for name in schema.GEO_LEVELS),
        pl.when(reason != "").then(reason).alias("geo__reason"),
    ).with_columns(places)
    joined = rows.frame.select(names).join(outcome, on=names, how="left", nulls_equal=True, maintain_order="left")
    for name in schema.GEO_LEVELS:
        rows.columns[name] = joined.get_column(f"{name}__clean").rename(name)
    rows.columns["geo__reason"] = joined.get_column("geo__reason")
    rows.add(pl.col("geo__reason"))


def _check_geography_rows(rows: Rows) -> None:
    country_ok = check_country(rows)
    country = pl.col("country")

    region_raw = rows.text("region")
    rows.columns["region"] = region_text = region_raw.str.to_uppercase()
    rows.columns["region__country"] = _lookup(region_text, "region_countries")
    region, region_country = pl.col("region"), pl.col("region__country")
    region_ok = region.is_not_null() & region_country.is_not_null()
    rows.add(
        rows.presence("region", required=False),
        pl.when(region.is_not_null() & region_country.is_null())
        .then(pl.format("region: {} is not an ISO 3166-2 code", quoted(pl.col("region__raw"))))
        .when(region_ok & country_ok & (region_country != country))
        .then(pl.format("region: '{}' is not in country '{}'", region, country)),
    )

    county_raw = rows.text("county", zero_pad=5)
    rows.columns["county"] = county_raw
    rows.columns["county__region"] = _lookup(county_raw, "county_regions")
    rows.columns["county__home"] = _lookup(county_raw, "county_countries")
    rows.columns["county__label"] = map_distinct(county_raw, lambda key: geo.label("county", key), pl.String())
    county, county_region, county_label = pl.col("county"), pl.col("county__region"), pl.col("county__label")
    county_ok = county.is_not_null() & county_region.is_not_null()
    rows.add(
        rows.presence("county", required=False),
        pl.when(county.is_not_null() & county.str.contains(r"^\d{5}$").not_())
        .then(pl.format("county: {} is not a 5-digit FIPS code", quoted(pl.col("county__raw"))))
        .when(county.is_not_null() & county_region.is_null())
        .then(pl.format("county: {} is not a known US county FIPS code", quoted(county)))
        .when(county_ok & country_ok & (country != "US") & (country != pl.col("county__home")))
        .then(pl.format("county: '{}' ({}) is a US county, but country is '{}'", county, county_label, country))
        .when(county_ok & region_ok & (county_region != region))
        .then(pl.format("county: '{}' ({}) is not in region '{}'", county, county_label, region)),
    )

    city_raw = rows.text("city")
    rows.columns["city"] = city_raw
    rows.columns["city__country"] = _lookup(city_raw, "city_countries")
    rows.columns["city__region"] = _lookup(city_raw, "city_regions")
    rows.columns["city__label"] = map_distinct(city_raw, lambda key: geo.label("city", key), pl.String())
    city, city_country, city_region, city_label = (
        pl.col("city"),
        pl.col("city__country"),
        pl.col("city__region"),
        pl.col("city__label"),
    )
    city_ok = city.is_not_null() & city_country.is_not_null()
    rows.add(
        rows.presence("city", required=False),
        pl.when(city.is_not_null() & city.str.contains(r"^\d+$").not_())
        .then(pl.format("city: {} is not a GeoNames id", quoted(pl.col("city__raw"))))
        .when(city.is_not_null() & city_country.is_null())
        .then(
            pl.format(
                "city: {} is not a known GeoNames city (population of at least {})",
                quoted(city),
                pl.lit(geo.CITY_MIN_POPULATION),
            )
        )
        .when(city_ok & country_ok & (city_country != country))
        .then(pl.format("city: '{}' ({}) is not in country '{}'", city, city_label, country))
        .when(city_ok & region_ok & city_region.is_not_null() & (city_region != region))
        .then(pl.format("city: '{}' ({}) is not in region '{}'", city, city_label, region)),
    )


@functools.cache
def _mapping(name: str) -> tuple[pl.Series, pl.Series]:
    """A `service.geo` lookup (a mapping of text to text) as key and value Series, built once: a
    dict given to `replace_strict` is turned into Series on every call (30,000 cities: 30 ms)."""
    mapping = getattr(geo, name)()
    return (pl.Series(list(mapping.keys()), dtype=pl.String),
            pl.Series(list(mapping.values()), dtype=pl.String))


def _lookup(values: pl.Series, name: str) -> pl.Series:
    """Each value's entry in the `service.geo` lookup `name` (null where none); a column of nulls
    (an optional column absent, the usual case for `city`) is not looked up at all."""
    if values.null_count() == values.len():
        return pl.Series(values.name, [None] * values.len(), dtype=pl.String)
    keys, mapped = _mapping(name)
    return values.replace_strict(keys, mapped, default=None, return_dtype=pl.String)
