"""One meaning, one noise: a cell's filters in their canonical form (docs/privacy.md, "How it works",
point 3).

A cell's noise is drawn from its description (`cells.cell_messages`), and the filters are part of
it. Two filters that select the same events must therefore be described alike, or each phrasing
draws new noise for the same true number and averaging the phrasings removes it (the "cloning"
of Gadotti et al., USENIX Security 2019). `canonical_filters` is the one rule, applied to a
/query's filters before its cells are computed and described (`publication.query.canonical_query`):

1. each filter's values are sorted and distinct (the request parser does this already);
2. a value that no stored event holds is dropped: it matches nothing, so the cell's events, and
   its exact numbers, are the same without it; a filter left without any value matches nothing,
   and every such request is described as one and the same empty cell;
3. geography: a value that no stored event holds together with the other geographic filters is
   dropped (a city of another country than the country filter's), and a geographic filter that
   every stored event passing the other geographic filters passes anyway is dropped (a country
   holding every filtered city; the county of a filtered city); coarser levels are dropped first;
4. a filter that holds every stored value of its column, on a column with no null, is dropped (all
   seven platforms are no platform filter).

Every step removes only what does not change which stored events the cell holds, so the exact
numbers are the same before and after; the rule reads the store as a whole (every value of a
column and every combination of places that any stored event holds, `Vocabulary`), never a
cell's own window. What it reveals is therefore whether a value occurs anywhere in the stored
events (a request padded with it draws the same noise as without it exactly when it does not),
not how often, when or by whom: docs/privacy.md, "What this guarantees".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import polars as pl

from service.store.schema import GEO_LEVELS  # coarsest first: country, region, county, city


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """What the whole store holds, for `canonical_filters`: each filterable column's stored values,
    the columns with a null somewhere, and every distinct combination of the geographic columns
    (strings, nulls kept) that a stored event holds."""

    values: Mapping[str, frozenset[str]]
    nulls: frozenset[str]
    places: pl.DataFrame  # columns GEO_LEVELS, one row per distinct combination

    @classmethod
    def of_frame(cls, frame: pl.DataFrame, columns: tuple[str, ...]) -> Vocabulary:
        """The vocabulary of an event frame (the polars engine's stored table)."""
        values = {column: frozenset(frame.get_column(column).drop_nulls().unique().cast(pl.String).to_list())
                  for column in columns}
        nulls = frozenset(column for column in columns if frame.get_column(column).null_count())
        places = frame.select(pl.col(level).cast(pl.String) for level in GEO_LEVELS).unique()
        return cls(values=values, nulls=nulls, places=places)


def _matching(places: pl.DataFrame, filters: Mapping[str, tuple[str, ...]], leave_out: str | None = None) -> pl.DataFrame:
    conditions = [pl.col(column).is_in(list(values)) for column, values in filters.items()
                  if column in GEO_LEVELS and column != leave_out]
    return places.filter(conditions) if conditions else places


def canonical_filters(filters: Mapping[str, tuple[str, ...]], vocabulary: Vocabulary) -> dict[str, tuple[str, ...]]:
    """The canonical form of a cell's filters (event column -> allowed values; the module docstring
    has the rule). The result selects exactly the stored events `filters` selects."""
    resolved: dict[str, tuple[str, ...]] = {}
    for column in sorted(filters):
        stored = vocabulary.values.get(column)
        values = sorted(set(filters[column]))
        resolved[column] = tuple(v for v in values if stored is None or v in stored)
    empty = [column for column, values in resolved.items() if not values]
    if empty:
        return {empty[0]: ()}
    geo = [level for level in GEO_LEVELS if level in resolved]
    if geo:
        together = _matching(vocabulary.places, resolved)
        for level in geo:
            held = set(together.get_column(level).drop_nulls().to_list())
            resolved[level] = tuple(v for v in resolved[level] if v in held)
            if not resolved[level]:
                return {level: ()}
        for level in geo:  # coarsest first: a country implied by its cities goes, the cities stay
            others = _matching(vocabulary.places, resolved, leave_out=level).get_column(level)
            if others.null_count() == 0 and set(others.to_list()) <= set(resolved[level]):
                del resolved[level]
    for column in [c for c in resolved if c not in GEO_LEVELS]:
        stored = vocabulary.values.get(column)
        if stored is not None and column not in vocabulary.nulls and stored <= set(resolved[column]):
            del resolved[column]
    return resolved
