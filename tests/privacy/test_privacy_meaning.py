"""One meaning, one noise (service/privacy/meaning.py): a cell's filters in their canonical form,
so that phrasings that select the same stored events are described, and noised, alike."""

from __future__ import annotations

import polars as pl
import pytest

from service.privacy.meaning import Vocabulary, canonical_filters

# Two countries; FR has one region with a null county; US-CA has two counties, one of them with
# two cities; one US event has no region at all.
PLACES = pl.DataFrame(
    [
        ("US", "US-CA", "06037", "LA"),
        ("US", "US-CA", "06037", "Pasadena"),
        ("US", "US-CA", "06075", "SF"),
        ("US", None, None, None),
        ("FR", "FR-IDF", None, "Paris"),
    ],
    schema={"country": pl.String, "region": pl.String, "county": pl.String, "city": pl.String},
    orient="row",
)
VOCABULARY = Vocabulary(
    values={
        "platform": frozenset({"chrome", "firefox", "ios"}),
        "keyword": frozenset({"cats", "dogs"}),
        "country": frozenset({"US", "FR"}),
        "region": frozenset({"US-CA", "FR-IDF"}),
        "county": frozenset({"06037", "06075"}),
        "city": frozenset({"LA", "Pasadena", "SF", "Paris"}),
    },
    nulls=frozenset({"region", "county", "city"}),
    places=PLACES,
)


def canonical(**filters):
    return canonical_filters({k: tuple(v) for k, v in filters.items()}, VOCABULARY)


def test_values_that_match_nothing_are_dropped():
    assert canonical(city=["LA", "zz1"]) == canonical(city=["LA", "zz2"]) == canonical(city=["LA"]) == {"city": ("LA",)}
    assert canonical(country=["US", "ZZ"]) == canonical(country=["US"])
    assert canonical(keyword=["cats", "no such"]) == {"keyword": ("cats",)}


def test_order_and_duplicates_do_not_matter():
    assert canonical(city=["SF", "LA", "SF"]) == canonical(city=["LA", "SF"]) == {"city": ("LA", "SF")}


def test_a_filter_of_every_value_of_a_column_without_nulls_is_no_filter():
    assert canonical(platform=["chrome", "firefox", "ios"], keyword=["dogs"]) == {"keyword": ("dogs",)}
    assert canonical(platform=["ios", "firefox", "chrome", "other"]) == {}
    assert canonical(country=["FR", "US"]) == {}
    # Not when the column has nulls: every city is not every event (one US event has no city).
    assert canonical(city=["LA", "Pasadena", "SF", "Paris"]) == {"city": ("LA", "Paris", "Pasadena", "SF")}
    # A strict subset stays.
    assert canonical(platform=["chrome", "ios"]) == {"platform": ("chrome", "ios")}


def test_a_coarser_filter_implied_by_the_finer_ones_is_dropped():
    assert canonical(country=["US"], city=["LA", "SF"]) == {"city": ("LA", "SF")}
    assert canonical(country=["US", "FR"], region=["US-CA"], county=["06037"], city=["LA"]) == {"city": ("LA",)}
    # A county implied by its cities goes; the cities stay.
    assert canonical(county=["06037"], city=["LA", "Pasadena"]) == {"city": ("LA", "Pasadena")}
    # A city of another county than the county filter's matches nothing together with it and goes;
    # then the county is implied by the city left.
    assert canonical(county=["06037"], city=["LA", "SF"]) == {"city": ("LA",)}
    # The region is implied by its two counties and goes; the counties stay (some events have none).
    assert canonical(county=["06037", "06075"], region=["US-CA"]) == {"county": ("06037", "06075")}


def test_a_finer_value_outside_the_coarser_filter_is_dropped():
    assert canonical(country=["FR"], city=["LA", "Paris"]) == {"city": ("Paris",)}


def test_a_coarser_filter_that_excludes_a_null_is_kept():
    # Every FR event is in FR-IDF, but the US events without a region are excluded by a region filter.
    assert canonical(region=["US-CA", "FR-IDF"]) == {"region": ("FR-IDF", "US-CA")}
    assert canonical(region=["FR-IDF"], country=["FR"]) == {"region": ("FR-IDF",)}


@pytest.mark.parametrize("filters", [
    {"city": ["zz1"]},
    {"city": ["zz1"], "keyword": ["cats"]},
    {"country": ["FR"], "city": ["LA"]},
])
def test_a_filter_that_matches_nothing_is_one_empty_cell(filters):
    result = canonical(**filters)
    assert len(result) == 1 and next(iter(result.values())) == ()
    assert result == canonical(**{next(iter(result)): ["zz3"]})


def test_the_rule_never_changes_which_events_are_selected():
    """Every canonical form selects exactly the events the request selects, on every event of a
    store built from the vocabulary's places crossed with its platforms and keywords."""
    events = PLACES.join(pl.DataFrame({"platform": ["chrome", "firefox", "ios"]}), how="cross") \
        .join(pl.DataFrame({"keyword": ["cats", "dogs"]}), how="cross").with_row_index("id")
    cases = [
        {"city": ["LA", "zz"], "country": ["US"]}, {"platform": ["chrome", "firefox", "ios", "x"]},
        {"county": ["06037"], "city": ["LA", "SF", "Paris"]}, {"region": ["US-CA"], "country": ["US", "FR"]},
        {"country": ["FR"], "platform": ["ios"], "keyword": ["dogs", "emu"]}, {"city": ["nowhere"], "keyword": ["cats"]},
    ]

    def selected(filters):
        conditions = [pl.col(column).is_in(list(values)) for column, values in filters.items()]
        return set((events.filter(conditions) if conditions else events).get_column("id").to_list())

    for case in cases:
        assert selected(canonical(**case)) == selected(case), case


def test_the_vocabulary_of_a_frame():
    frame = PLACES.with_columns(pl.lit("chrome").alias("platform"), pl.lit("cats").alias("keyword"))
    vocabulary = Vocabulary.of_frame(frame, ("platform", "keyword", "country", "city"))
    assert vocabulary.values["city"] == {"LA", "Pasadena", "SF", "Paris"}
    assert vocabulary.nulls == {"city"}
    assert vocabulary.places.height == 5
