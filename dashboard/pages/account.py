"""/account: the key's plan, prefix, limits and the endpoints the plan may call (GET /api/v1/account)."""

from __future__ import annotations

import dash
from dash import Input, Output, State, html

from dashboard import ui

dash.register_page(__name__, path="/account", title="Account · Signals", name="Account")


def layout(**_query: str):
    return html.Div([html.H1("Account"), html.Div(id="account-details"), html.Div(id="account-status")],
                    className="page")


@dash.callback(
    Output("account-status", "children"), Output("api-meta", "data", allow_duplicate=True),
    Output("account-details", "children"),
    Input("account-details", "id"), State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def load(_page, session):
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate

    def render(replies):
        body = replies[0].body
        usage = ui.api.Usage.from_headers(replies[0].headers)
        facts = [("Subscription", body.get("subscription")), ("Plan", body.get("plan_label")),
                 ("Key prefix", body.get("key_prefix")), ("Key expires", body.get("key_expires_at") or "never"),
                 ("Requests per minute", body.get("requests_per_minute")),
                 ("Used this minute", f"{(usage.limit or 0) - (usage.remaining or 0)} of {usage.limit}")]
        details = html.Div([
            html.Dl([item for label, value in facts
                     for item in (html.Dt(label), html.Dd(str(value), id=f"account-{label.lower().replace(' ', '-')}"))],
                    className="facts"),
            html.H2("Endpoints of your plan"),
            ui.table(body.get("endpoints", []), ["operation", "method", "path"], table_id="account-endpoints"),
        ])
        return [ui.disclaimer_footer(body.get("disclaimer"), ui.as_of_text(replies[0]) or "— (account data is live)")], \
            details

    children, meta, details = ui.answer(session, [("account", {})], render, empty=None)
    return children, meta, details
