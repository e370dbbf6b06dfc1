"""A gunicorn target for benchmarks: the web application exactly as `service.wsgi` builds it, except
that no event store is handed to `create_app`, so that SIGNALS_PRIVACY_RELEASE=1 takes effect.

`service/wsgi.py` passes `store=` to `create_app`, and `create_app` serves the release only when
no store (and no engine) is given, so under gunicorn the flag is ignored (bench_release.py
`attacks --http` measures both targets). Used as `gunicorn -c gunicorn.conf.py --pythonpath bench
release_wsgi:app`.
"""

import logging

from service.app import create_app
from service.observability.logging_setup import configure_logging
from service.settings import Settings

settings = Settings.from_env()
configure_logging(settings.log_level)
if not settings.privacy_release:
    logging.getLogger("signals").warning("bench/release_wsgi.py without SIGNALS_PRIVACY_RELEASE=1")
app = create_app(settings)
