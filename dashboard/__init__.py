"""The Signals dashboard: a Plotly Dash app over the API (docs/dashboard.md).

It talks to the API over HTTP only, through the shared client (connectors/client.py), with the
viewer's own key; it never imports service/. `dashboard.app` builds the shell, each module of
`dashboard/pages/` registers one page and owns its layout and callbacks, `dashboard.figures` holds
the figures as pure functions of the API's JSON, and `dashboard.wsgi:server` is gunicorn's target.
"""
