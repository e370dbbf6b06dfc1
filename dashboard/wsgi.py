"""gunicorn's target: `gunicorn dashboard.wsgi:server` (the Procfile's dashboard process)."""

from dashboard.app import app, server  # noqa: F401  (importing the app registers every page)
