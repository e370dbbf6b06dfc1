"""The webhooks section of /account: the subscription's webhooks (/api/v1/account/webhooks), the
list, a form to create or edit one, delete, send a test (trial_delivery.py follows it), rotate the
secret, and the delivery log.

Every change is one API call through the shared client, and the list is read again after it (the
`webhooks-version` store). A new or rotated secret is shown once, as the API shows it, and kept
nowhere else. The section's rate-limit use goes to the shell through its own `webhooks-meta` store.
"""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc, html

from connectors.operations import Operation
from dashboard import ui
from dashboard.webhooks import LOG_PAGE, form, trial_delivery

LIST_COLUMNS = ["id", "url", "window", "dimension", "metric", "threshold_pct", "cooldown_minutes", "min_baseline",
                "enabled", "cooldown_until", "disabled_reason", "description"]
LOG_COLUMNS = ["attempted_at", "event", "attempt", "outcome", "status_code", "duration_ms", "error", "delivery_id"]
ui.relay_meta("webhooks-meta")


def section(create: Operation) -> html.Section:
    """The section, its form built from the document's create_webhook operation."""
    return html.Section([
        html.H2("Webhooks: trending alerts sent to your URL"),
        html.P("When a value's growth in Trending (the same window, dimension, metric and minimum baseline) "
               "exceeds your threshold, Signals POSTs a signed trending_alert to your https URL, at most once "
               "per cooldown. Check each delivery's signature with the webhook's secret (Standard Webhooks); "
               "the secret is shown only when the webhook is created or its secret rotated.", className="hint"),
        dcc.Store(id="webhooks-version", data=0), dcc.Store(id="webhook-editing"),
        dcc.Store(id="webhook-log-cursor"), ui.page_meta("webhooks-meta"),
        *trial_delivery.elements(),
        dcc.Loading(html.Div(id="webhook-list"), type="default", delay_show=150),
        html.Div([
            html.Div([
                html.Label("selected webhook", htmlFor="webhook-select", className="control-label"),
                dcc.RadioItems(id="webhook-select", options=[], value=None, className="radio radio-list"),
            ], className="control"),
            html.Div([html.Button("Edit", id="webhook-edit", n_clicks=0, className="button"),
                      html.Button("Send test", id="webhook-test", n_clicks=0, className="button"),
                      html.Button("Rotate secret", id="webhook-rotate", n_clicks=0, className="button"),
                      html.Button("Delete", id="webhook-delete", n_clicks=0, className="button button-danger"),
                      dcc.ConfirmDialog(id="webhook-confirm-delete")], className="controls"),
        ], id="webhook-actions", hidden=True),
        dcc.Loading(html.Div(id="webhook-message"), type="dot"),
        html.Div([
            html.H3("Delivery log of the selected webhook (newest first)"),
            dcc.Loading(html.Div(id="webhook-log"), type="default", delay_show=150),
            html.Button("Older attempts", id="webhook-older", n_clicks=0, className="button-plain", hidden=True),
        ], id="webhook-log-section", hidden=True),
        html.H3("New webhook", id="webhook-form-title"),
        form.form(create),
        html.Div([html.Button("Create webhook", id="webhook-create", n_clicks=0, className="button"),
                  html.Button("Save changes", id="webhook-save", n_clicks=0, className="button", disabled=True),
                  html.Button("Clear the form", id="webhook-new", n_clicks=0, className="button-plain")],
                 className="controls"),
    ], className="webhooks")


def _secret(text: str, secret: str) -> html.Div:
    return html.Div([html.P(text), html.P(["Signing secret, shown only now (copy it to your receiver): ",
                                           html.Code(secret, id="webhook-secret")])], className="notice", role="status")


@dash.callback(
    Output("webhook-list", "children"), Output("webhook-select", "options"), Output("webhook-select", "value"),
    Output("webhook-actions", "hidden"), Output("webhook-log-section", "hidden"),
    Output("webhooks-meta", "data", allow_duplicate=True),
    Input("webhooks-version", "data"), State("webhook-select", "value"), State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def list_webhooks(_version, selected, session):
    """The list, read again after every change; the selection kept while its webhook exists."""
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate
    reply, problem, meta = ui.call(session, "list_webhooks")
    if reply is None:
        return problem, [], None, True, True, meta
    hooks, limit = reply.body["webhooks"], reply.body["limit"]
    options = [{"label": f"{h['url']} · {h['window']} {h['dimension']} > {h['threshold_pct']:g} %"
                         + ("" if h["enabled"] else " (disabled)"), "value": h["id"]} for h in hooks]
    ids = [h["id"] for h in hooks]
    keep = selected if selected in ids else (ids[0] if ids else None)
    count = html.P(f"{len(hooks)} of {limit} webhooks", className="hint", id="webhook-count")
    shown = [{**h, "enabled": "yes" if h["enabled"] else "no"} for h in hooks]
    listing = [count, html.Div(ui.table(shown, LIST_COLUMNS, table_id="webhook-rows"), className="table-scroll")] \
        if hooks else \
        [count, html.P("No webhook yet: fill in the form below to create one.", className="hint")]
    return listing, options, keep, not hooks, not hooks, meta


@dash.callback(
    *[Output(control_id, "value") for _field, control_id in form.FORM],
    Output("webhook-editing", "data"), Output("webhook-form-title", "children"), Output("webhook-save", "disabled"),
    Output("webhook-message", "children", allow_duplicate=True), Output("webhooks-meta", "data", allow_duplicate=True),
    Input("webhook-edit", "n_clicks"), Input("webhook-new", "n_clicks"),
    State("webhook-select", "value"), State("session", "data"),
    prevent_initial_call=True,
)
def fill_form(_edit, _new, selected, session):
    """Edit: the selected webhook's fields into the form. Clear: the document's defaults."""
    if not ui.clicked():
        raise dash.exceptions.PreventUpdate
    keep = [dash.no_update] * len(form.FORM)
    if dash.ctx.triggered_id == "webhook-new":
        return *form.defaults(), None, "New webhook", True, None, dash.no_update
    if not selected:
        return *keep, dash.no_update, dash.no_update, dash.no_update, ui.error_box("Choose a webhook first."), \
            dash.no_update
    reply, problem, meta = ui.call(session, "get_webhook", {"webhook_id": selected})
    if reply is None:
        return *keep, dash.no_update, dash.no_update, dash.no_update, problem, meta
    hook = reply.body
    return *form.values_of(hook), hook["id"], f"Edit webhook {hook['id']}", False, None, meta


@dash.callback(
    Output("webhook-message", "children", allow_duplicate=True), Output("webhooks-version", "data"),
    Output("webhook-select", "value", allow_duplicate=True), Output("webhooks-meta", "data", allow_duplicate=True),
    Input("webhook-create", "n_clicks"), Input("webhook-save", "n_clicks"),
    *[State(control_id, "value") for _field, control_id in form.FORM],
    State("webhook-editing", "data"), State("webhooks-version", "data"), State("session", "data"),
    prevent_initial_call=True,
)
def submit(_create, _save, *rest):
    """Create a webhook from the form, or save the form's fields into the one being edited."""
    *values, editing, version, session = rest
    if not ui.key_of(session) or not ui.clicked():
        raise dash.exceptions.PreventUpdate
    saving = dash.ctx.triggered_id == "webhook-save"
    if saving and not editing:
        return ui.error_box("Choose a webhook and press Edit first."), dash.no_update, dash.no_update, dash.no_update
    body, empty = form.body(values)
    if empty:
        return ui.error_box("Fill in: " + "; ".join(empty) + "."), dash.no_update, dash.no_update, dash.no_update
    if saving:
        reply, problem, meta = ui.call(session, "update_webhook", {"webhook_id": editing, **body})
        if reply is None:
            return problem, dash.no_update, dash.no_update, meta
        return ui.notice(f"Saved webhook {editing}."), (version or 0) + 1, editing, meta
    reply, problem, meta = ui.call(session, "create_webhook", body)
    if reply is None:
        return problem, dash.no_update, dash.no_update, meta
    created = reply.body
    return _secret(f"Created webhook {created['id']}.", created["secret"]), (version or 0) + 1, created["id"], meta


@dash.callback(
    Output("webhook-confirm-delete", "displayed"), Output("webhook-confirm-delete", "message"),
    Output("webhook-message", "children", allow_duplicate=True),
    Input("webhook-delete", "n_clicks"), State("webhook-select", "value"),
    prevent_initial_call=True,
)
def ask_delete(_clicks, selected):
    if not ui.clicked():
        raise dash.exceptions.PreventUpdate
    if not selected:
        return False, dash.no_update, ui.error_box("Choose a webhook first.")
    return True, f"Delete webhook {selected} and its delivery log? This cannot be undone.", None


@dash.callback(
    Output("webhook-message", "children", allow_duplicate=True),
    Output("webhooks-version", "data", allow_duplicate=True), Output("webhooks-meta", "data", allow_duplicate=True),
    Output("webhook-test-pending", "data"), Output("webhook-test-poll", "disabled"),
    Output("webhook-test-poll", "n_intervals"), Output("webhook-test-poll", "interval"),
    Input("webhook-test", "n_clicks"), Input("webhook-rotate", "n_clicks"),
    Input("webhook-confirm-delete", "submit_n_clicks"),
    State("webhook-select", "value"), State("webhooks-version", "data"), State("session", "data"),
    prevent_initial_call=True,
)
def act(_test, _rotate, _delete, selected, version, session):
    """Send a test delivery, rotate the secret, or delete (after the confirmation). A test the
    worker will send starts following the delivery log (trial_delivery.py)."""
    if not ui.key_of(session) or not ui.clicked():
        raise dash.exceptions.PreventUpdate
    keep = (dash.no_update,) * 4  # a test being followed goes on
    if not selected:
        return ui.error_box("Choose a webhook first."), dash.no_update, dash.no_update, *keep
    name = {"webhook-test": "test_webhook", "webhook-rotate": "rotate_webhook_secret",
            "webhook-confirm-delete": "delete_webhook"}[dash.ctx.triggered_id]
    reply, problem, meta = ui.call(session, name, {"webhook_id": selected})
    if reply is None:
        return problem, dash.no_update, meta, *keep
    if name == "delete_webhook":
        return ui.notice(f"Deleted webhook {selected}."), (version or 0) + 1, meta, *trial_delivery.STOP
    if name == "rotate_webhook_secret":
        return _secret(f"New secret for webhook {selected}; the old one no longer signs.", reply.body["secret"]), \
            dash.no_update, meta, *keep
    message, poll = trial_delivery.started(reply.body, selected)
    return message, (version or 0) + 1, meta, *poll


@dash.callback(
    Output("webhook-log", "children"), Output("webhook-log-cursor", "data"), Output("webhook-older", "hidden"),
    Output("webhooks-meta", "data", allow_duplicate=True),
    Input("webhook-select", "value"), Input("webhooks-version", "data"), Input("webhook-older", "n_clicks"),
    State("webhook-log-cursor", "data"), State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def delivery_log(selected, _version, _older, cursor, session):
    """The selected webhook's attempts, newest first; "Older attempts" adds the next page."""
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate
    if not selected:
        return html.P("Select a webhook to see its deliveries.", className="hint"), None, True, dash.no_update
    more = dash.ctx.triggered_id == "webhook-older" and cursor and cursor.get("webhook") == selected
    arguments = {"webhook_id": selected, "limit": LOG_PAGE, "before": cursor["before"] if more else None}
    reply, problem, meta = ui.call(session, "list_webhook_deliveries", arguments)
    if reply is None:
        return problem, None, True, meta
    rows = (cursor["rows"] if more else []) + reply.body["deliveries"]
    next_before = reply.body.get("next_before")
    shown = html.Div(ui.table(rows, LOG_COLUMNS, table_id="webhook-log-rows"), className="table-scroll") if rows else \
        html.P("No delivery yet. Send a test to see one here.", className="hint")
    return shown, {"webhook": selected, "before": next_before, "rows": rows}, next_before is None, meta
