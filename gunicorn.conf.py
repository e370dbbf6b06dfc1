"""gunicorn settings for the web process (`gunicorn -c gunicorn.conf.py service.wsgi:app`).

Workers: WEB_CONCURRENCY if set; otherwise cores + 1 with Redis, and 1 without — without
REDIS_URL, rate limits and the cache live in each process, so several workers would each grant
the full limit. Why cores + 1 and not gunicorn's usual (2 x cores) + 1: a request here is CPU work
in Python (or in polars, which uses every core by itself) with one short wait for Redis, not a
long wait on I/O, and a request that waits (on a client, on a computation) holds one of its
worker's threads, not a worker. What the number rests on: cached hits measured with *sync* workers
on the 2-core benchmark host on 2026-11-23, before the threaded worker shipped (docs/benchmarks.md,
section 8: 3 workers as fast as 4 or 5, 8 a fifth slower). It has not been measured again with the
threaded worker: the hour-turn storm (section 4) ran 3 workers x 8 threads only, and 32 threads a
worker were no faster than 8, since the machine's compute slots, not the threads, bound the
computing (docs/decisions/0009-web-worker-count.md). The workers share one copy of the event data: each
maps the current generation's snapshot (service/store/snapshot.py), so a worker adds its own
overhead (interpreter, libraries, query temporaries), not another copy of the data. The app is NOT
preloaded: every worker imports it, and so maps the data, after the fork (polars must not run in
the master).

Threads: each worker serves SIGNALS_WEB_THREADS requests at once (service/server/gunicorn_worker.py:
gunicorn's threaded worker whose client sockets time out after SIGNALS_CLIENT_TIMEOUT_SECONDS
without progress). A slow or unfinished request costs its client a connection and, for at most
that timeout, a thread; never a worker. Kept-alive connections wait in the worker's poller.

Listens on SIGNALS_HOST (default 127.0.0.1: this machine only; set 0.0.0.0 to expose it).

Request limits: the app answers a URL (path and query string) over 4096 bytes with 414 itself
(service/http/middleware/url_length.py), so gunicorn's request-line limit is set to its maximum, 8190,
above ours. Header limits stay at gunicorn's defaults, which no API client comes near: 100 fields
of at most 8190 bytes each. Requests past gunicorn's limits are refused by gunicorn before the app
sees them (414 or 431); `post_worker_init` makes those answers problem+json too.
"""

import math
import multiprocessing

from service.backend import embedded as _embedded
from service.backend import web_workers_refusal
from service.observability import metrics_export
from service.settings import Settings, SettingsError

try:
    _settings = Settings.from_env()
except SettingsError as exc:  # one line saying what to set (production without SIGNALS_SECRET), no traceback
    raise SystemExit(f"error: {exc}") from None
# Metrics: the workers (and the machine's precompute and alert processes) write their values into
# one directory; the master serves their sum on SIGNALS_METRICS_PORT (service/observability/metrics_export.py).
_metrics_dir = metrics_export.use_directory(_settings.run_dir / "metrics")

bind = _settings.bind

# gunicorn 27's control socket (gunicornc) defaults to one path per user ($HOME/.gunicorn/gunicorn.ctl):
# a second instance on the machine (another data directory, another port; the dashboard's gunicorn)
# took the same path, and stopping it removed the first one's socket. Each API instance has its own,
# in its run directory, named by its port (one instance per port); gunicornc -s <path> reaches it.
# A path too long for a Unix socket (108 bytes) leaves the control socket off rather than shared.
control_socket = str((_settings.run_dir / f"gunicorn-{_settings.bind.rsplit(':', 1)[-1]}.ctl").absolute())
control_socket_disable = len(control_socket.encode()) > 100
# Embedded ClickHouse (chdb://) is open in one process at a time: one worker (service/backend.py).
_default_workers = multiprocessing.cpu_count() + 1 if _settings.redis_url and not _embedded(_settings) else 1
workers = _settings.web_concurrency or _default_workers


def _secret_refusal() -> str | None:
    """Without SIGNALS_SECRET (the noise's key) the master refuses before it starts a worker."""
    try:
        _settings.require_secret()
    except SettingsError as exc:
        return str(exc)
    return None


def on_starting(server) -> None:
    """Without SIGNALS_SECRET the web process refuses to start. Several workers without Redis is
    allowed (WEB_CONCURRENCY), but not what it seems. Several workers on embedded ClickHouse
    (chdb://) are refused: only one process can open its directory."""
    count = server.cfg.workers  # what gunicorn will run, after -w or GUNICORN_CMD_ARGS
    refusal = _secret_refusal() or web_workers_refusal(_settings, count)
    if refusal:
        server.log.error(refusal)
        raise SystemExit(refusal)
    metrics_export.sweep(_metrics_dir)
    if not _settings.redis_url and count > 1:
        server.log.warning(
            "REDIS_URL is not set but %d workers are configured: each keeps its own rate limits and "
            "cache, so a subscription may be granted up to %d times its limit. Set REDIS_URL, or "
            "WEB_CONCURRENCY=1.", count, count)


def when_ready(server) -> None:
    """Serve the metrics from the master, on a port of their own (not the API's: they are for the
    operator, never for API keys' holders)."""
    if not _settings.metrics_port:
        return
    try:
        metrics_export.serve(_settings.host, _settings.metrics_port)
    except OSError as exc:  # the API matters more than its metrics: say so, and serve on
        server.log.error("metrics not served: port %d: %s (set SIGNALS_METRICS_PORT)", _settings.metrics_port, exc)
        return
    server.log.info("metrics on http://%s:%d/metrics", _settings.host, _settings.metrics_port)


def child_exit(server, worker) -> None:
    metrics_export.forget(worker.pid)


def post_worker_init(worker) -> None:
    """gunicorn's own refusals (request line or headers too large, malformed HTTP) as problem+json."""
    from service.server import gunicorn_errors

    gunicorn_errors.install()


worker_class = "service.server.gunicorn_worker.Worker"
threads = _settings.web_threads
worker_connections = 1000  # open connections per worker (kept-alive ones included), gunicorn's default
preload_app = False
# A worker whose main loop is silent this long is killed. Requests run in the worker's threads and
# stop at SIGNALS_COMPUTE_DEADLINE_SECONDS with a 503 (service/answers/deadline.py); the main loop only
# polls connections, so this is a last resort for a wedged process, kept 40 s above the deadline.
timeout = max(60, math.ceil(_settings.compute_deadline_seconds) + 40)
graceful_timeout = 20
keepalive = 5
max_requests = 0       # workers keep their loaded data; no periodic recycling
accesslog = "-"        # the default access log format has no Authorization header and no body
logger_class = "service.server.gunicorn_logging.Logger"  # and keys put in the URL are redacted
errorlog = "-"
loglevel = _settings.log_level
forwarded_allow_ips = "127.0.0.1"
limit_request_line = 8190        # gunicorn's maximum (0 would mean unlimited); the app's limit is 4096
limit_request_fields = 100       # gunicorn's default, stated here with the other limits
limit_request_field_size = 8190  # gunicorn's default: the largest header an API client sends is a key
