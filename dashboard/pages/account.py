"""/account: the key's plan, prefix, limits, privacy budget and the endpoints the plan may call (GET /api/v1/account),
all as the API states them, and below them the subscription's webhooks (dashboard/webhooks/)."""

from __future__ import annotations

import dash
from dash import Input, Output, State, html

from connectors import privacy_budget
from connectors.client import SignalsError
from dashboard import api, ui
from dashboard.webhooks import section

dash.register_page(__name__, path="/account", title="Account · Signals", name="Account")
ui.relay_meta("account-meta")


def layout(**_query: str):
    try:
        create = api.operation("create_webhook")
    except SignalsError as error:
        return ui.unavailable_layout(error)
    return html.Div([
        html.H1("Account"), html.Div(id="account-details"), html.Div(id="account-status"),
        ui.page_meta("account-meta"),
        section.section(create),
    ], className="page")


def _details(body: dict, usage: api.Usage, budget: privacy_budget.PrivacyBudget | None = None) -> html.Div:
    facts = [("Subscription", body.get("subscription")), ("Plan", body.get("plan_label")),
             ("Key prefix", body.get("key_prefix")), ("Key expires", body.get("key_expires_at") or "never"),
             ("Requests per minute", body.get("requests_per_minute")),
             ("Used this minute", f"{(usage.limit or 0) - (usage.remaining or 0)} of {usage.limit}")]
    if budget is not None:  # the subscription's privacy budget this month (docs/privacy.md)
        facts += [("Privacy budget spent", f"{budget.spent:,.1f} of {budget.limit:,.0f} epsilon this month "
                                           f"({budget.remaining:,.1f} left)"),
                  ("Privacy budget renews", budget.renews)]
    return html.Div([
        html.Dl([item for label, value in facts
                 for item in (html.Dt(label), html.Dd(str(value), id=f"account-{label.lower().replace(' ', '-')}"))],
                className="facts"),
        html.H2("Endpoints of your plan"),
        ui.table(body.get("endpoints", []), ["operation", "method", "path"], table_id="account-endpoints"),
    ])


@dash.callback(
    Output("account-status", "children"), Output("account-meta", "data", allow_duplicate=True),
    Output("account-details", "children"),
    Input("account-details", "id"), State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def load(_page, session):
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate

    def render(replies):
        body = replies[0].body
        footer = ui.disclaimer_footer(body.get("disclaimer"), ui.as_of_text(replies[0]) or "— (account data is live)")
        return [footer], _details(body, api.Usage.from_headers(replies[0].headers),
                                  privacy_budget.read(replies[0].headers))

    return ui.answer(session, [("account", {})], render, empty=None)
