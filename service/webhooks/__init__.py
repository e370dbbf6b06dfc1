"""Trending alerts delivered to subscribers' webhooks (docs/architecture.md, "Webhooks").

- `fields.py`         the webhook's fields: validation of create and update bodies
- `webhook_store.py`  webhooks, the delivery outbox and the attempt log in the accounts database
- `ssrf.py`           which URLs may be called: https, every resolved address global
- `sender.py`         one signed POST to the checked address (no redirects, 10 s timeout)
- `evaluate.py`       one evaluation round: trending (same engine and privacy as GET /trending) -> alerts
- `worker.py`         the worker loop (`python -m service worker`)
- `resources.py`      the management API under /api/v1/account/webhooks
"""
