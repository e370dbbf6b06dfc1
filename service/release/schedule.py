"""Running the schedule for a deployment: `release_now(settings)` releases every node closed by
the current hour (the lander calls it after each landing, `python -m service data release` on
demand), from whichever engine holds the events."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from service.api.windows import compute_as_of
from service.release.builder import DayEvents, Summary, release_through
from service.release.noise import release_key
from service.release.storage import ReleaseStore
from service.settings import Settings


def day_events(settings: Settings) -> DayEvents:
    """The events of the deployment's engine, a UTC day at a time."""
    from service import backend

    chosen = backend.choose(settings)
    store = chosen.event_store()
    snapshot = store.snapshot()
    if settings.uses_clickhouse:
        from service.release.sources import ClickHouseDays

        return ClickHouseDays(snapshot)
    from service.release.sources import FrameDays

    return FrameDays(snapshot)


def release_now(settings: Settings, now: dt.datetime, *, rebuild: bool = False,
                progress: Callable[[int, int], None] | None = None) -> Summary:
    """Release every node closed by the start of `now`'s hour, but no later than the end of the
    store's last hour with an event (as `as_of`: a store that stopped receiving events is not
    released into hours it knows nothing of). `rebuild`: drop the release first (meant for a new
    secret, docs/privacy.md "Late events, rebuilding, secrets")."""
    store = ReleaseStore(settings.data_dir)
    if rebuild:
        store.remove_all()
    events = day_events(settings)
    return release_through(store, events, release_key(settings.require_secret()), compute_as_of(now, events.last_event()),
                           progress=progress)
