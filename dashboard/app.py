"""The dashboard's shell: header (plan, rate-limit use, navigation, sign-out), the browser-session
store holding the viewer's key, and Dash Pages' container. Each page lives in dashboard/pages/.

The key is kept in a `dcc.Store` with storage_type="session" (the tab's sessionStorage: gone when
the tab closes), reaches the server only in callback request bodies, never in a URL, and is
never logged. Any answer of 401 clears it and sends the viewer back to /sign-in.
"""

from __future__ import annotations

import logging
from typing import Any

import dash
from dash import Input, Output, dcc, html

from dashboard import edges

SIGN_IN = "/sign-in"
NAV = [("/", "Overview"), ("/keywords", "Keywords"), ("/domains", "Domains"), ("/geography", "Geography"),
       ("/trending", "Trending"), ("/activity", "Activity"), ("/query", "Query"), ("/account", "Account")]

# compress: Dash's scripts (plotly.min.js alone is 4.8 MB) and callback answers go out compressed
# to browsers that accept it (flask-compress; a first visit over a real network is the slow part).
app = dash.Dash(__name__, use_pages=True, pages_folder="pages", title="Signals", update_title="Loading…",
                suppress_callback_exceptions=True, serve_locally=True, compress=True)
server = app.server
edges.install(app)  # anti-framing headers; malformed callback requests refused in JSON
# Werkzeug's request log (the development server) names only paths; keep it quiet anyway.
logging.getLogger("werkzeug").setLevel(logging.WARNING)

app.layout = html.Div([
    dcc.Location(id="url"),
    # Navigation from callbacks sets its `href`, not `pathname`: pages rewrite their query string
    # with history.replaceState (dashboard/view_state.py), which Dash's Location props do not see,
    # and a Location given only a new pathname pushes its stale href instead.
    dcc.Location(id="redirect", refresh="callback-nav"),
    dcc.Store(id="session", storage_type="session"),
    dcc.Store(id="api-meta"),
    html.Header([
        html.A("Signals", href="/", className="brand"),
        html.Nav([dcc.Link(label, href=path, className="nav-link", id=f"nav-{label.lower()}") for path, label in NAV],
                 id="nav"),
        html.Div([html.Span(id="plan-badge", className="badge"), html.Span(id="rate-use", className="rate"),
                  html.Button("Sign out", id="sign-out", n_clicks=0, className="button-quiet")],
                 id="who", className="who"),
    ], className="top"),
    html.Main(dash.page_container, className="main"),
], className="shell")


def usage_text(meta: dict[str, Any] | None) -> str:
    meta = meta or {}
    limit, remaining, reset = meta.get("limit"), meta.get("remaining"), meta.get("reset")
    if limit is None or remaining is None:
        return ""
    used = limit - remaining
    return f"{used} of {limit} requests used this minute" + (f" · resets in {reset} s" if reset is not None else "")


@app.callback(
    Output("redirect", "href"), Output("session", "data"), Output("plan-badge", "children"),
    Output("rate-use", "children"), Output("who", "hidden"), Output("nav", "hidden"),
    Input("url", "pathname"), Input("session", "data"), Input("api-meta", "data"), Input("sign-out", "n_clicks"),
)
def guard(pathname: str | None, session: dict | None, meta: dict | None, _signed_out: int):
    """Sign-out, the 401 that ends a session, the way to sign-in without a key, and the header."""
    trigger = dash.ctx.triggered_id
    if trigger == "sign-out" and _signed_out:
        return SIGN_IN, {"notice": "You are signed out."}, "", "", True, True
    if trigger == "api-meta" and (meta or {}).get("status") == 401 and (session or {}).get("key"):
        notice = "Your key was not accepted (revoked or expired?). Please sign in again."
        return SIGN_IN, {"notice": notice}, "", "", True, True
    signed_in = bool((session or {}).get("key"))
    if not signed_in:
        go_to = SIGN_IN if pathname != SIGN_IN else dash.no_update
        return go_to, dash.no_update, "", "", True, True
    plan = f"{session.get('plan_label', '')} plan · key {session.get('key_prefix', '')}…"
    return dash.no_update, dash.no_update, plan, usage_text(meta), False, False
