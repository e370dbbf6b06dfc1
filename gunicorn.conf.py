"""gunicorn settings for the web process (`gunicorn -c gunicorn.conf.py service.wsgi:app`).

Sized for the machine: (2 x cores) + 1 sync workers unless WEB_CONCURRENCY says otherwise. Each
worker holds its own copy of the event data in memory (about 60 bytes an event), so on a small
machine with a large store lower WEB_CONCURRENCY. The app is NOT preloaded: every worker imports
it, and so loads the data, after the fork (polars must not run in the master).
"""

import multiprocessing
import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or 0) or multiprocessing.cpu_count() * 2 + 1
worker_class = "sync"
preload_app = False
timeout = 60           # a cold 90-day /query on a large store may take a few seconds
graceful_timeout = 20
keepalive = 5
max_requests = 0       # workers keep their loaded data; no periodic recycling
accesslog = "-"        # the default access log format has no Authorization header and no body
errorlog = "-"
loglevel = os.environ.get("SIGNALS_LOG_LEVEL", "info")
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
