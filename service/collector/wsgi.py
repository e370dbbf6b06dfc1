"""The gunicorn target of the collector (`service.collector.wsgi:app`), imported in each worker."""

from service.collector.app import create_collector_app
from service.observability.logging_setup import configure_logging
from service.settings import Settings

settings = Settings.from_env()
configure_logging(settings.log_level)
app = create_collector_app(settings)
