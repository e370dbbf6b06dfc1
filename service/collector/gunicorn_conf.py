"""gunicorn settings for the collector (`gunicorn -c python:service.collector.gunicorn_conf
service.collector.wsgi:app`, the Procfile's `collector`).

Listens on SIGNALS_HOST:SIGNALS_COLLECTOR_PORT. One worker by default (`-w N` or
GUNICORN_CMD_ARGS for more): a post's work is polars over its lines (which uses the cores by
itself) and an fsync; a worker's threads (SIGNALS_WEB_THREADS) serve several posts at once, and one
process remembers every id it accepted for the answer's `duplicates` (docs/collector.md). Its
metrics join the machine's (served by the web process's master, gunicorn.conf.py).
"""

from service.observability import metrics_export
from service.settings import Settings, SettingsError

try:
    _settings = Settings.from_env()
except SettingsError as exc:  # one line saying what to set (production without SIGNALS_SECRET), no traceback
    raise SystemExit(f"error: {exc}") from None
metrics_export.use_directory(_settings.run_dir / "metrics")

bind = _settings.collector_bind
# Its own control socket in the run directory, named by its port, as the API's (gunicorn.conf.py):
# gunicorn's default is one path per user, which the API's and a second instance would share.
control_socket = str((_settings.run_dir / f"gunicorn-{_settings.collector_bind.rsplit(':', 1)[-1]}.ctl").absolute())
control_socket_disable = len(control_socket.encode()) > 100
workers = 1
worker_class = "service.server.gunicorn_worker.Worker"
threads = _settings.web_threads
preload_app = False
timeout = 60
graceful_timeout = 20
keepalive = 5
accesslog = "-"
logger_class = "service.server.gunicorn_logging.Logger"
errorlog = "-"
loglevel = _settings.log_level
limit_request_line = 8190


def on_starting(server) -> None:
    """Without SIGNALS_SECRET (the key of the user ids' hash) the collector refuses to start."""
    try:
        _settings.require_secret()
    except SettingsError as exc:
        server.log.error(str(exc))
        raise SystemExit(str(exc)) from None


def child_exit(server, worker) -> None:
    metrics_export.forget(worker.pid)


def worker_exit(server, worker) -> None:
    """The worker's connections to RabbitMQ and Redis closed as it stops (not left to the broker's timeouts)."""
    from service.collector.app import close_all

    close_all()


def post_worker_init(worker) -> None:
    from service.server import gunicorn_errors

    gunicorn_errors.install()
