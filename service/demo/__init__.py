"""A realistic, deterministic demo data set for both event tables (DESIGN "Event data"), made by
`python -m service data demo`. The generator only produces rows: it lands them through the
store's landing target (service/store/target.py), as ingest does.

The model, in the order it is sampled (all vectorised; the same seed, arguments and secret give
the same rows):

- users (`world`): about one per `EVENTS_PER_USER` events, each with a home city (by population,
  inside a country drawn from `COUNTRY_SHARES`), a main platform, an activity level and a filter
  list of keywords drawn from a Zipf law over the vocabulary;
- suppression events and keyword changes (`sampling`): user by activity, keyword from that
  user's list, domain, platform and page context by weight (`catalogue`), a time of day and day
  of the period (`timeline`);
- bursts (`bursts`): the same for every seed, values whose rate jumps several-fold in the recent
  period of a trending window, so every trending window finds clear growth.

Modules:

    catalogue.py   the values events are drawn from, with weights (vocabulary.txt: the keywords)
    draws.py       seeded uniform numbers and weighted choices
    timeline.py    days and hours: growth, weekends, the daily profile, local time
    world.py       the users and their places, platforms, activity and filter lists
    bursts.py      the injected bursts and how their extra events are sized and placed
    sampling.py    events as indices, then in the stored schema
    pieces.py      how a large data set is cut into ranges of days and landing slices
    generate.py    `generate_demo`: builds the data set and lands it, in one piece or several
"""
