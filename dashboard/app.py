"""The dashboard's shell: header (plan, rate-limit use, navigation, sign-out), the browser-session
store holding the viewer's key, and Dash Pages' container. Each page lives in dashboard/pages/.

The key is kept in a `dcc.Store` with storage_type="session" (the tab's sessionStorage: gone when
the tab closes), reaches the server only in callback request bodies, never in a URL, and is
never logged. Any answer of 401 clears it and sends the viewer back to /sign-in.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

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

USAGE_NOTE = ("Your plan's limit counts requests over a moving 60-second window; 'resets in' is when the "
              "oldest request counted leaves it (the API's X-RateLimit-Reset), counted from when it was said.")

app.layout = html.Div([
    dcc.Location(id="url"),
    # Navigation from callbacks sets its `href`, not `pathname`: pages rewrite their query string
    # with history.replaceState (dashboard/view_state.py), which Dash's Location props do not see,
    # and a Location given only a new pathname pushes its stale href instead.
    dcc.Location(id="redirect", refresh="callback-nav"),
    dcc.Store(id="session", storage_type="session"),
    dcc.Store(id="api-meta"),
    dcc.Store(id="usage"),  # the newest rate-limit use shown in the header (`newest_usage`)
    html.Header([
        html.A("Signals", href="/", className="brand"),
        html.Nav([dcc.Link(label, href=path, className="nav-link", id=f"nav-{label.lower()}") for path, label in NAV],
                 id="nav"),
        html.Div([html.Span(id="plan-badge", className="badge"), html.Span(id="rate-use", className="rate", title=USAGE_NOTE),
                  html.Button("Sign out", id="sign-out", n_clicks=0, className="button-quiet")],
                 id="who", className="who"),
    ], className="top"),
    html.Main(dash.page_container, className="main"),
], className="shell")



def newest_usage(meta: dict[str, Any] | None, shown: dict[str, Any] | None) -> dict[str, Any] | None:
    """The rate-limit use to show: the newest answer's (by the time it came, `at`). A page's calls
    finish in any order: an earlier answer arriving last must not replace a later one's count."""
    if not meta or meta.get("limit") is None:
        return shown
    if shown and (shown.get("at") or 0) > (meta.get("at") or 0):
        return shown
    return meta


def usage_text(meta: dict[str, Any] | None, now: float | None = None) -> str:
    """ "10 of 300 requests used this minute · resets in 12 s": the reset counted from when the
    answer said it (`at` + `reset`), so pages loaded one after another count it down rather than
    each showing what its own last call happened to say."""
    meta = meta or {}
    limit, remaining, reset = meta.get("limit"), meta.get("remaining"), meta.get("reset")
    if limit is None or remaining is None:
        return ""
    used = limit - remaining
    text = f"{used} of {limit} requests used this minute"
    if reset is None:
        return text
    at = meta.get("at")
    left = reset if at is None or now is None else max(0, round(at + reset - now))
    return text + (f" · resets in {left} s" if left > 0 else "")


@app.callback(
    Output("redirect", "href"), Output("session", "data"), Output("plan-badge", "children"),
    Output("rate-use", "children"), Output("who", "hidden"), Output("nav", "hidden"), Output("usage", "data"),
    Input("url", "pathname"), Input("session", "data"), Input("api-meta", "data"), Input("sign-out", "n_clicks"),
    State("usage", "data"),
)
def guard(pathname: str | None, session: dict | None, meta: dict | None, _signed_out: int, shown: dict | None):
    """Sign-out, the 401 that ends a session, the way to sign-in without a key, and the header."""
    trigger = dash.ctx.triggered_id
    if trigger == "sign-out" and _signed_out:
        return SIGN_IN, {"notice": "You are signed out."}, "", "", True, True, None
    if trigger == "api-meta" and (meta or {}).get("status") == 401 and (session or {}).get("key"):
        notice = "Your key was not accepted (revoked or expired?). Please sign in again."
        return SIGN_IN, {"notice": notice}, "", "", True, True, None
    signed_in = bool((session or {}).get("key"))
    if not signed_in or pathname == SIGN_IN:  # the sign-in page has no header: no plan, no "Sign out"
        go_to = SIGN_IN if not signed_in and pathname != SIGN_IN else dash.no_update
        return go_to, dash.no_update, "", "", True, not signed_in, dash.no_update
    # The key's prefix in the badge's tooltip (and on /account): the header stays one row at 1440 px.
    plan = html.Span(f"{session.get('plan_label', '')} plan", title=f"key {session.get('key_prefix', '')}…")
    usage = newest_usage(meta, shown)
    return dash.no_update, dash.no_update, plan, usage_text(usage, time.time()), False, False, usage
