"""The seams between the web process and an engine, as `typing.Protocol`s: what a computation reads
(`Snapshot`), what computes the answers (`QueryEngine`), and what holds the events (`EventSource`,
`Backend`). Each engine implements them in its own package: the polars engine over the Parquet store
(service/engine/polars/, service/store/), the ClickHouse engine over the ClickHouse tables
(service/engine/clickhouse/, service/clickhouse/). service/backend.py picks one pair from the settings.

`QueryEngine` has one method per operation of the endpoint table (service/api/endpoints.py `ENDPOINTS`,
by `Endpoint.name`); `missing_operations` names those an engine lacks, and a quick test runs it
over every engine (tests/engine/test_engine_operations.py).

Nothing here imports polars or an engine at run time: gunicorn's master imports service/backend.py,
which names these types.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

# Raised by `Backend.check`, `Backend.warm` and `Backend.landing_target`; at home with the storage
# (service/store/unavailable.py), re-exported here for the importers that name it from here.
from service.store.unavailable import BackendUnavailable as BackendUnavailable

if TYPE_CHECKING:
    import polars as pl

    from service.engine import requests as rq
    from service.engine.cost import EventCounts
    from service.privacy import Privacy
    from service.store.target import LandingTarget


class Snapshot(Protocol):
    """One consistent view of both event tables: what one request's computations read. Compared and
    hashed by identity; caches and memos key on it."""

    @property
    def generation(self) -> int:
        """The data generation the view holds (rows of generations up to it)."""

    @property
    def last_event(self) -> dt.datetime | None:
        """The newest event over both tables (None without data): where `as_of` comes from."""

    @property
    def first_event(self) -> dt.datetime | None:
        """The oldest event over both tables (None without data): where the earliest window may start."""

    @property
    def versions(self) -> Mapping[str, Mapping[dt.date, int]]:
        """Per table: UTC date -> the last generation that landed rows for it (the privacy noise
        and the cache of a past `as_of` are keyed on it)."""


SnapshotT = TypeVar("SnapshotT", bound=Snapshot, contravariant=True)
SnapshotT_co = TypeVar("SnapshotT_co", bound=Snapshot, covariant=True)


class QueryEngine(Protocol[SnapshotT]):
    """Typed requests in, published frames out: one method per operation of the endpoint table, each
    answering from one snapshot for one `as_of`, every number passed through the privacy stage once.
    The frame has the endpoint's record fields in order (the `Endpoint.record_schema`)."""

    privacy: Privacy

    def top_keywords(self, snapshot: SnapshotT, as_of: dt.datetime, req: rq.TopKeywords) -> pl.DataFrame: ...

    def keyword_timeseries(self, snapshot: SnapshotT, as_of: dt.datetime, req: rq.KeywordTimeseries) -> pl.DataFrame: ...

    def domain_timeseries(self, snapshot: SnapshotT, as_of: dt.datetime, req: rq.DomainTimeseries) -> pl.DataFrame: ...

    def geo_heat(self, snapshot: SnapshotT, as_of: dt.datetime, req: rq.GeoHeat) -> pl.DataFrame: ...

    def trending(self, snapshot: SnapshotT, as_of: dt.datetime, req: rq.Trending) -> pl.DataFrame: ...

    def keyword_activity(self, snapshot: SnapshotT, as_of: dt.datetime, req: rq.KeywordActivity) -> pl.DataFrame: ...

    def query(self, snapshot: SnapshotT, as_of: dt.datetime, req: rq.FlexibleQuery) -> pl.DataFrame: ...

    def counts(self, snapshot: SnapshotT) -> EventCounts:
        """What the /query cost bound counts, over this engine's snapshot (service/engine/cost.py)."""


class EventSource(Protocol[SnapshotT_co]):
    """What readers take snapshots from: it opens lazily (on the first `snapshot()`) and follows the
    data generation that each landing publishes."""

    @property
    def loaded(self) -> bool:
        """A snapshot was taken (the store is open)."""

    def snapshot(self) -> SnapshotT_co:
        """The current snapshot; the first call opens the store."""


SourceT = TypeVar("SourceT", bound="EventSource[Snapshot]")


class Backend(Protocol[SnapshotT, SourceT]):
    """Where the events are and what computes on them: one per value of SIGNALS_ENGINE
    (service/backend.py `BACKENDS`). Creating one opens nothing. Generic in the snapshot its store
    gives and its engine reads (`SnapshotT`), and in its store's own type (`SourceT`: `check` and
    `warm` take the store that `event_store` made)."""

    name: str  # the SIGNALS_ENGINE value

    def engine_class(self) -> type[QueryEngine[SnapshotT]]:
        """The engine's class (imported on call)."""

    def event_store(self) -> SourceT:
        """The store readers take snapshots from (opens nothing yet)."""

    def engine(self, privacy: Privacy) -> QueryEngine[SnapshotT]:
        """The engine for the store's snapshots."""

    def check(self, store: SourceT) -> None:
        """Raise `BackendUnavailable` if the store cannot be read now (a command checks before it starts)."""

    def warm(self, store: SourceT) -> None:
        """Make a web worker ready before its first request (open the store, build what the first
        answers need); raises `BackendUnavailable`."""

    def landing_target(self) -> LandingTarget:
        """Where `data ingest` and `data demo` land rows; raises `BackendUnavailable`."""

    def describe(self) -> str:
        """Where the events are, for messages: 'ClickHouse', or the data directory."""


def missing_operations(engine: type, operations: Iterable[str]) -> list[str]:
    """The operations (endpoint names) `engine` has no method for, in the given order."""
    return [name for name in operations if not callable(getattr(engine, name, None))]
