"""/sign-in: the viewer's API key, checked with GET /api/v1/account, kept for the tab's session."""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc, html

from connectors.client import SignalsError
from dashboard import api, ui

dash.register_page(__name__, path="/sign-in", title="Sign in · Signals", name="Sign in")


def layout(**_query: str) -> html.Div:
    return html.Div([
        html.H1("Sign in"),
        html.P("Paste your Signals API key. It is checked with the API and kept in this browser tab only "
               "(closing the tab forgets it); every number you see is fetched with it, so your plan and "
               "its limits apply."),
        html.P("No key yet? Keys come with a subscription from whoever runs this Signals; on the demo, "
               "./scripts/run.sh prints one (the whole line starting sig_live_).", className="hint"),
        html.Div(id="sign-in-notice"),
        html.Div([
            html.Label("API key", htmlFor="api-key", className="control-label"),
            dcc.Input(id="api-key", type="password", placeholder="sig_live_…", autoComplete="off",
                      debounce=False, className="key-input", n_submit=0),
            html.Button("Sign in", id="sign-in", n_clicks=0, className="button"),
        ], className="sign-in-form"),
        dcc.Loading(html.Div(id="sign-in-message"), type="dot"),
    ], className="page narrow")


@dash.callback(Output("sign-in-notice", "children"), Input("sign-in-notice", "id"), State("session", "data"))
def notice(_page: str, session: dict | None):
    text = (session or {}).get("notice")
    return html.P(text, className="notice", role="status") if text else None


@dash.callback(
    Output("session", "data", allow_duplicate=True), Output("redirect", "href", allow_duplicate=True),
    Output("api-meta", "data", allow_duplicate=True), Output("sign-in-message", "children"),
    Output("api-key", "value"),
    Input("sign-in", "n_clicks"), Input("api-key", "n_submit"), State("api-key", "value"),
    prevent_initial_call=True,
)
def sign_in(_clicks: int, _submits: int, key: str | None):
    key = (key or "").strip()
    if not key:
        if dash.ctx.triggered_id != "sign-in":
            raise dash.exceptions.PreventUpdate
        return dash.no_update, dash.no_update, dash.no_update, ui.error_box("Paste your API key first."), dash.no_update
    try:
        reply = api.account(key)
    except SignalsError as error:
        message = ("That key was not accepted: " + error.detail) if error.status == 401 else api.explain(error)
        return dash.no_update, dash.no_update, ui.meta(error=error) | {"status": None}, \
            ui.failure_box(error, message=message), \
            dash.no_update
    body = reply.body
    session = {"key": key, "plan": body.get("plan"), "plan_label": body.get("plan_label"),
               "key_prefix": body.get("key_prefix"), "operations": [e["operation"] for e in body.get("endpoints", [])]}
    return session, "/", ui.meta(reply), None, ""
