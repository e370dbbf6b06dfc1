"""What holds the events and what computes on them, from the settings (SIGNALS_ENGINE): `choose` is
the one place that picks between the Parquet store with the polars engine and ClickHouse.

Every process that reads or lands events gets its `Backend` here (service/engine/interface.py says
what one offers): the web process (service/app.py, service/wsgi.py), the precompute process
(service/cli/precompute.py), the alert worker (service/cli/worker.py) and the data commands
(service/cli/data.py). None of them names an engine. A third engine is a class here, an entry in
`BACKENDS` and in `service.settings.ENGINES`, and its package under service/engine/.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from service.settings import Settings

# Imported where used: gunicorn.conf.py imports this module in the master, which must not load
# polars or open a database (service/wsgi.py).
if TYPE_CHECKING:
    from service.clickhouse.connection import ClickHouse
    from service.clickhouse.store import ClickHouseStore
    from service.engine.clickhouse import ClickHouseEngine
    from service.engine.interface import Backend, EventSource, QueryEngine
    from service.engine.polars import PolarsEngine
    from service.privacy import Privacy
    from service.store.reader import EventStore
    from service.store.target import LandingTarget


def embedded(settings: Settings) -> bool:
    """Events in embedded ClickHouse (chdb://): one process at a time may open its directory."""
    return settings.uses_clickhouse and settings.clickhouse_url.startswith("chdb://")


def web_workers_refusal(settings: Settings, workers: int) -> str | None:
    """Why the web process must not start with `workers` workers, if it must not."""
    if embedded(settings) and workers > 1:
        return (f"SIGNALS_CLICKHOUSE_URL is embedded ClickHouse (chdb://), which one process at a time can "
                f"open, but {workers} web workers are configured: set WEB_CONCURRENCY=1, or use a ClickHouse "
                f"server (SIGNALS_CLICKHOUSE_URL=http://...) to run several")
    return None


def clickhouse(settings: Settings, *, deadline: bool = True) -> ClickHouse:
    """The ClickHouse connection of SIGNALS_CLICKHOUSE_URL; queries carry the compute deadline's wall-clock
    backstop (max_execution_time: deadline.WALL_FACTOR x SIGNALS_COMPUTE_DEADLINE_SECONDS; a query slowed by
    its neighbours is not stopped sooner) unless `deadline` is off (landing and `data clickhouse-init`
    have none)."""
    from service.answers.deadline import WALL_FACTOR
    from service.clickhouse.connection import ClickHouse

    return ClickHouse(settings.clickhouse_url,
                      deadline_seconds=settings.compute_deadline_seconds * WALL_FACTOR if deadline else None)


class ParquetBackend:
    """SIGNALS_ENGINE=polars: the Parquet store in the data directory, the polars engine in memory."""

    name = "polars"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def engine_class(self) -> type[PolarsEngine]:
        from service.engine.polars import PolarsEngine

        return PolarsEngine

    def event_store(self) -> EventStore:
        from service.store.reader import EventStore

        return EventStore(self.settings.data_dir)

    def engine(self, privacy: Privacy) -> PolarsEngine:
        return self.engine_class()(privacy)

    def check(self, store: EventStore) -> None:
        """Nothing to check: the data directory is read on the first snapshot, and an empty one is
        no data yet, not an error."""

    def warm(self, store: EventStore) -> None:
        """Sweep what an ingest cut short left (none while one runs), map the snapshot with /query's
        cost index and start learning its grouping keys, so the first request does not pay, and
        follow new generations between requests too, so an idle worker lets go of a replaced
        snapshot."""
        from service.engine.polars.counts import index_for
        from service.engine.polars.user_keys import known_bits
        from service.store.leftovers import sweep_if_idle

        sweep_if_idle(self.settings.data_dir)
        frames = store.snapshot()
        index_for(frames)
        known_bits(frames)  # starts learning the users' spare bits (engine/polars/user_keys.py)
        threading.Thread(target=store.follow, args=(threading.Event(),), name="follow-generation",
                         daemon=True).start()

    def landing_target(self) -> LandingTarget:
        from service.store.target import ParquetTarget

        return ParquetTarget(self.settings.data_dir)

    def describe(self) -> str:
        return str(self.settings.data_dir)


class ClickHouseBackend:
    """SIGNALS_ENGINE=clickhouse: the ClickHouse tables of SIGNALS_CLICKHOUSE_URL (service/clickhouse/),
    the ClickHouse engine (service/engine/clickhouse/). Quarantine files still go to the data directory."""

    name = "clickhouse"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def engine_class(self) -> type[ClickHouseEngine]:
        from service.engine.clickhouse import ClickHouseEngine

        return ClickHouseEngine

    def event_store(self) -> ClickHouseStore:
        from service.clickhouse.store import ClickHouseStore

        return ClickHouseStore(clickhouse(self.settings))

    def engine(self, privacy: Privacy) -> ClickHouseEngine:
        return self.engine_class()(privacy)

    def check(self, store: ClickHouseStore) -> None:
        """ClickHouse reachable, the tables there, a chdb directory not held by another process."""
        store.snapshot()

    def warm(self, store: ClickHouseStore) -> None:
        """Open ClickHouse now: a chdb directory held elsewhere is refused here, with the reason."""
        store.snapshot()

    def landing_target(self) -> LandingTarget:
        from service.clickhouse import schema
        from service.clickhouse.landing import ClickHouseTarget

        ch = clickhouse(self.settings, deadline=False)
        schema.require(ch)
        return ClickHouseTarget(ch, self.settings.data_dir)

    def describe(self) -> str:
        return "ClickHouse"


BACKENDS: dict[str, type[ParquetBackend] | type[ClickHouseBackend]] = {
    ParquetBackend.name: ParquetBackend,
    ClickHouseBackend.name: ClickHouseBackend,
}


def choose(settings: Settings) -> Backend:
    """The backend SIGNALS_ENGINE names (one of `service.settings.ENGINES`, checked by Settings)."""
    return BACKENDS[settings.engine](settings)


def answering(settings: Settings, chosen: Backend, privacy: Privacy) -> tuple[EventSource, QueryEngine]:
    """What answers read and what computes them: with SIGNALS_PRIVACY_RELEASE the release of the
    data directory (service/release/: post-processing only, whichever engine holds the events),
    else the backend's store and its engine with the per-cell privacy stage. The web process, the
    precompute process and the alert worker all answer through this."""
    if settings.privacy_release:
        from service.release.engine import ReleaseEngine, ReleaseSource

        return ReleaseSource(settings.data_dir), ReleaseEngine()  # type: ignore[return-value]
    return chosen.event_store(), chosen.engine(privacy)


def warm_answering(settings: Settings, chosen: Backend, store: EventSource) -> None:
    """Make `answering`'s store ready before the first request: the release loaded, or the
    backend's store opened (`Backend.warm`); raises `BackendUnavailable` for the latter."""
    if settings.privacy_release:
        store.snapshot()
    else:
        chosen.warm(store)


if TYPE_CHECKING:  # the type checker holds each backend, and through it its engine, to the seam
    from service.clickhouse.store import ClickHouseSnapshot
    from service.store.reader import EventFrames

    _PARQUET: type[Backend[EventFrames, EventStore]] = ParquetBackend
    _CLICKHOUSE: type[Backend[ClickHouseSnapshot, ClickHouseStore]] = ClickHouseBackend
