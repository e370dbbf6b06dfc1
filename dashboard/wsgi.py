"""gunicorn's target: `gunicorn dashboard.wsgi:server` (the Procfile's dashboard process).

Dash completes its set-up on the first request it serves (hooks that register its scripts and the
Pages router) and marks that done before it is done, so in a threaded worker a second request
arriving meanwhile was answered 500 ("dash is not a registered library") and the page stayed on
"Loading..." for good. One request served here, in-process, as each worker loads the app and
before it takes any, completes the set-up.
"""

from dashboard.app import app, server  # importing the app registers every page

_first = server.test_client().get("/_dash-dependencies")
if _first.status_code != 200:
    raise RuntimeError(f"the dashboard could not set itself up: /_dash-dependencies answered {_first.status_code}")

__all__ = ["app", "server"]
