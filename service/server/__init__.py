"""The gunicorn pieces of the web process: its threaded worker, its access log, its own refusals as problem+json."""
