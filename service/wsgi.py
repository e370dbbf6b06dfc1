"""The gunicorn target (`service.wsgi:app`). Imported in each worker after fork (preload_app is
off): the event data is loaded here, in the worker, never in the master — polars must not have
run in a process before it forks."""

from service import backend
from service.app import create_app, privacy_params
from service.observability.logging_setup import configure_logging
from service.privacy import Privacy
from service.settings import Settings

settings = Settings.from_env()
configure_logging(settings.log_level)
settings.require_secret()  # the master refused already (gunicorn.conf.py); a worker never serves without it
chosen = backend.choose(settings)
store, engine = backend.answering(settings, chosen, Privacy(settings.secret, privacy_params(settings)))
backend.warm_answering(settings, chosen, store)  # load now, so the first request does not pay
app = create_app(settings, store=store, engine=engine)
