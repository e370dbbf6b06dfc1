"""The gunicorn target (`service.wsgi:app`). Imported in each worker after fork (preload_app is
off): the event data is loaded here, in the worker, never in the master — polars must not have
run in a process before it forks."""

import logging
import threading

from service.app import create_app
from service.engine import cost
from service.logging_setup import configure_logging
from service.settings import Settings
from service.store.reader import EventStore
from service.store.writer import sweep_if_idle

settings = Settings.from_env()
configure_logging(settings.log_level)
if settings.uses_development_secret:
    logging.getLogger("signals").warning(
        "development mode: using the built-in development secret (set SIGNALS_SECRET and SIGNALS_ENV=production)"
    )
sweep_if_idle(settings.data_dir)  # leftovers of an ingest that was cut short (logged); none while one runs
store = EventStore(settings.data_dir)
cost.index_for(store.snapshot())  # map now (with /query's cost index), so the first request does not pay
# Follow new generations between requests too, so an idle worker lets go of a replaced snapshot.
threading.Thread(target=store.follow, args=(threading.Event(),), name="follow-generation", daemon=True).start()
app = create_app(settings, store=store)
