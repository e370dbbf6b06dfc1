"""Generating the demo data set and landing it, in one generation or in pieces.

All events lie in [end - days, end). The same seed, arguments and secret give the same rows (the
model: service/demo/__init__.py).

Pieces: a data set of more than `piece_events` events (default `PIECE_EVENTS`) is not built in
memory at once (about 250 bytes an event at its peak: 7.6 GB at 30M). The world (users, homes,
platforms, activity, filter lists, user ids) is built once for the whole data set; then the days
are sampled in consecutive ranges, each expected to hold at most `piece_events` events (its share
of the total by the day weights, growth measured over the whole period), and the last range
covers the longest trending window of a burst (30 days, or every day when there are fewer), so a
burst is sized and placed on its whole window exactly as in one piece (`pieces`). Each range is
sampled in index form (a few integers per event), then materialised and landed in slices of whole
days of at most `piece_events` events, one generation each, in time order (each landing's rows
come after the previous one's: the snapshot appends). Peak memory is then about one slice
materialised plus the index form of the last range (about 40 bytes an event of the last 30 days),
not the whole set. The rows are not the one-piece rows (each range draws its own numbers, and the
hour shifted across midnight wraps inside its range instead of the whole period), but the same
model: the same users and places, day weights, bursts. The burst thinning (`bursts`) applies to
the last range only. Without `replace`, a failure part-way leaves the pieces landed so far (a
consistent store with the first days); with `replace`, see `service.store.replacing.replacing`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import sys
import time
from pathlib import Path

import polars as pl
from tqdm import tqdm

from service.api.windows import iso_z
from service.demo import pieces, sampling
from service.demo.bursts import DEMO_BURSTS, Burst
from service.demo.draws import Random
from service.demo.timeline import SECOND_US, Clock
from service.demo.world import EVENTS_PER_USER, World
from service.store import schema
from service.store.target import LandingTarget, ParquetTarget
from service.store.user_ids import hash_user_ids

# Data sets with more events are generated and landed in pieces of at most this many (one
# generation each); memory follows this, not the data set's size (module docstring, "Pieces").
PIECE_EVENTS = 10_000_000


class DemoDataExistsError(RuntimeError):
    """The data directory already holds event data and `replace` was not asked for."""


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
    """Generate and land the demo data set (the model: service/demo/__init__.py).

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
    aside once for all pieces and moved back if any piece fails (`LandingTarget.replacing`).
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
        rnd = Random(seed)
        world = World.build(rnd, n_users=max(1, round(events / EVENTS_PER_USER)))
        bar.update(1)

        bar.set_postfix_str("suppressions")
        clock = Clock(start, days)
        bursts = DEMO_BURSTS
        suppressions = sampling.suppressions(rnd, world, clock, events, bursts)
        bar.update(1)

        bar.set_postfix_str("keyword changes")
        changes = sampling.keyword_changes(rnd, world, clock, round(events * sampling.CHANGES_PER_EVENT), bursts)
        bar.update(1)

        bar.set_postfix_str("user ids")
        user_ids = _user_ids(world, seed, secret)
        frames = {
            # Sorting the integer index rows is much cheaper than sorting the stored rows later.
            schema.SUPPRESSIONS: sampling.materialise_suppressions(suppressions.sort("t"), world, user_ids, clock),
            schema.KEYWORD_CHANGES: sampling.materialise_changes(changes.sort("t"), world, user_ids, clock),
        }
        bar.update(1)

        bar.set_postfix_str("writing")
        n_files = sum(f.get_column("ts").dt.date().n_unique() for f in frames.values())
        bar.total = 4 + n_files
        bar.refresh()
        def file_written() -> None:
            bar.update(1)

        with target.replacing() if replace else contextlib.nullcontext():
            result = target.write_tables(frames, on_file=file_written)

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


def _user_ids(world: World, seed: int, secret: str) -> pl.Series:
    return hash_user_ids(pl.Series([f"demo-{seed}-{i}" for i in range(world.n_users)]), secret)


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
    rnd = Random(seed)
    world = World.build(rnd, n_users=max(1, round(events / EVENTS_PER_USER)))
    user_ids = _user_ids(world, seed, secret)
    chunks = pieces.chunks(start, days, events, piece_events)
    say(f"demo: {events:,} events in pieces of at most {piece_events:,} (days sampled in {len(chunks)} "
        f"ranges; the last, {chunks[-1].days} days, with the bursts); {world.n_users:,} users")
    files: list[Path] = []
    suppressions_total = changes_total = 0
    generation = None
    piece = 0
    with target.replacing() if replace else contextlib.nullcontext():
        for chunk in chunks:
            clock = Clock(start + dt.timedelta(days=chunk.first_day), chunk.days,
                           first_day=chunk.first_day, total_days=days)
            bursts = DEMO_BURSTS if chunk.bursts else ()
            suppressions = sampling.suppressions(rnd, world, clock, chunk.events, bursts).sort("t")
            changes = sampling.keyword_changes(rnd, world, clock, chunk.changes, bursts).sort("t")
            for first, last in pieces.landing_slices(suppressions, clock, piece_events):
                piece += 1
                piece_started = time.perf_counter()
                low, high = first * 86_400 * SECOND_US, last * 86_400 * SECOND_US
                rows = {
                    schema.SUPPRESSIONS: sampling.materialise_suppressions(
                        pieces.between(suppressions, low, high), world, user_ids, clock),
                    schema.KEYWORD_CHANGES: sampling.materialise_changes(
                        pieces.between(changes, low, high), world, user_ids, clock),
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
