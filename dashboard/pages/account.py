"""/account: the key's plan, prefix, limits and the endpoints the plan may call (GET /api/v1/account),
and the subscription's webhooks (/api/v1/account/webhooks): the list, a form to create or edit one,
delete, send a test, rotate the secret, and the delivery log.

The form's controls (allowed values, bounds, defaults) come from the served document's
create_webhook body; every change is one API call through the shared client, and the list is read
again after it (the `webhooks-version` store). A new or rotated secret is shown once, as the API
shows it, and kept nowhere else.

"Send test" queues a test delivery that the worker process sends (the API answers 202 with its
`delivery_id` and no attempt yet; an older API sent it at once and answered 200 with the attempt).
While it is queued, the page follows the delivery log (`dcc.Interval`, a few reads over about
TEST_FOLLOW_SECONDS, each a short callback: no server thread waits) until an attempt of that
delivery appears, and then says how it went.
"""

from __future__ import annotations

import time
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from connectors.client import SignalsError
from dashboard import api, ui

dash.register_page(__name__, path="/account", title="Account · Signals", name="Account")

# Form fields in the order shown: (body field, control id).
FORM = [("url", "webhook-url"), ("window", "webhook-window"), ("dimension", "webhook-dimension"),
        ("metric", "webhook-metric"), ("threshold_pct", "webhook-threshold-pct"),
        ("cooldown_minutes", "webhook-cooldown-minutes"), ("min_baseline", "webhook-min-baseline"),
        ("enabled", "webhook-enabled"), ("description", "webhook-description")]
LIST_COLUMNS = ["id", "url", "window", "dimension", "metric", "threshold_pct", "cooldown_minutes", "min_baseline",
                "enabled", "cooldown_until", "disabled_reason", "description"]
LOG_COLUMNS = ["attempted_at", "event", "attempt", "outcome", "status_code", "duration_ms", "error", "delivery_id"]
LOG_PAGE = 20
# Seconds between reads of the delivery log while a test delivery is queued (the worker looks for
# due deliveries every second); about TEST_FOLLOW_SECONDS in all, 8 reads of the plan's budget.
TEST_POLL_SCHEDULE = (1, 2, 3, 4, 5, 5, 5, 5)
TEST_FOLLOW_SECONDS = sum(TEST_POLL_SCHEDULE)
ui.relay_meta("account-meta")


def layout(**_query: str):
    try:
        create = api.operation("create_webhook")
    except SignalsError as error:
        return ui.unavailable_layout(error)
    return html.Div([
        html.H1("Account"), html.Div(id="account-details"), html.Div(id="account-status"),
        html.Section([
            html.H2("Webhooks: trending alerts sent to your URL"),
            html.P("When a value's growth in Trending (the same window, dimension, metric and minimum baseline) "
                   "exceeds your threshold, Signals POSTs a signed trending_alert to your https URL, at most once "
                   "per cooldown. Check each delivery's signature with the webhook's secret (Standard Webhooks); "
                   "the secret is shown only when the webhook is created or its secret rotated.", className="hint"),
            dcc.Store(id="webhooks-version", data=0), dcc.Store(id="webhook-editing"),
            dcc.Store(id="webhook-log-cursor"), ui.page_meta("account-meta"),
            dcc.Store(id="webhook-test-pending"),
            dcc.Interval(id="webhook-test-poll", interval=TEST_POLL_SCHEDULE[0] * 1000, n_intervals=0, disabled=True),
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
            _form(create),
            html.Div([html.Button("Create webhook", id="webhook-create", n_clicks=0, className="button"),
                      html.Button("Save changes", id="webhook-save", n_clicks=0, className="button", disabled=True),
                      html.Button("Clear the form", id="webhook-new", n_clicks=0, className="button-plain")],
                     className="controls"),
        ], className="webhooks"),
    ], className="page")


def _initial(param: Any) -> Any:
    """A form control's value for the document's default of a field."""
    if param.type == "boolean":
        return ["enabled"] if param.default else []
    if param.type == "string" and not param.enum:
        return param.default or ""
    return param.default


def _form(create: Any) -> html.Div:
    """The create body's fields as controls: closed sets as radios, numbers with their bounds."""
    controls = []
    for field, control_id in FORM:
        param = create.param(field)
        if param.enum:
            controls.append(ui.radio(control_id, param, field.replace("_", " ")))
        elif param.type in ("integer", "number"):
            controls.append(ui.number(control_id, param, field.replace("_", " ")))
        elif param.type == "boolean":
            controls.append(html.Div([
                html.Label(field, htmlFor=control_id, className="control-label"),
                dcc.Checklist(id=control_id, options=[{"label": "send alerts", "value": "enabled"}],
                              value=_initial(param), className="radio")], className="control"))
        else:
            controls.append(html.Div([
                html.Label(field, htmlFor=control_id, className="control-label"),
                dcc.Input(id=control_id, type="url" if field == "url" else "text", value=_initial(param),
                          maxLength=param.schema.get("maxLength"), className="text-input",
                          placeholder="https://example.com/signals-hook" if field == "url" else ""),
                html.Span(param.description or (param.allowed() if param.required else
                                                f"optional, at most {param.schema.get('maxLength')} characters"),
                          className="hint")], className="control"))
    return html.Div(controls, className="controls")


def _defaults() -> list[Any]:
    create = api.operation("create_webhook")
    return [_initial(create.param(field)) for field, _id in FORM]


def _body(values: list[Any]) -> tuple[dict[str, Any], list[str]]:
    """The request body from the form's values, and the fields left empty (the API needs them)."""
    create = api.operation("create_webhook")
    body: dict[str, Any] = {}
    empty = []
    for (field, _id), value in zip(FORM, values, strict=True):
        param = create.param(field)
        if param.type == "boolean":
            body[field] = "enabled" in (value or [])
        elif isinstance(value, str):
            body[field] = value.strip() if field == "url" else value
        elif value is None:
            if param.required or param.type in ("integer", "number"):
                empty.append(f"{field.replace('_', ' ')} ({param.allowed()})")
        else:
            body[field] = value
    return body, empty


def _secret(text: str, secret: str) -> html.Div:
    return html.Div([html.P(text), html.P(["Signing secret, shown only now (copy it to your receiver): ",
                                           html.Code(secret, id="webhook-secret")])], className="notice", role="status")


def _done(text: str) -> html.P:
    return html.P(text, className="notice", role="status")


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


@dash.callback(
    Output("webhook-list", "children"), Output("webhook-select", "options"), Output("webhook-select", "value"),
    Output("webhook-actions", "hidden"), Output("webhook-log-section", "hidden"),
    Output("account-meta", "data", allow_duplicate=True),
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
    *[Output(control_id, "value") for _field, control_id in FORM],
    Output("webhook-editing", "data"), Output("webhook-form-title", "children"), Output("webhook-save", "disabled"),
    Output("webhook-message", "children", allow_duplicate=True), Output("account-meta", "data", allow_duplicate=True),
    Input("webhook-edit", "n_clicks"), Input("webhook-new", "n_clicks"),
    State("webhook-select", "value"), State("session", "data"),
    prevent_initial_call=True,
)
def fill_form(_edit, _new, selected, session):
    """Edit: the selected webhook's fields into the form. Clear: the document's defaults."""
    if not ui.clicked():
        raise dash.exceptions.PreventUpdate
    keep = [dash.no_update] * len(FORM)
    if dash.ctx.triggered_id == "webhook-new":
        return *_defaults(), None, "New webhook", True, None, dash.no_update
    if not selected:
        return *keep, dash.no_update, dash.no_update, dash.no_update, ui.error_box("Choose a webhook first."), \
            dash.no_update
    reply, problem, meta = ui.call(session, "get_webhook", {"webhook_id": selected})
    if reply is None:
        return *keep, dash.no_update, dash.no_update, dash.no_update, problem, meta
    hook = reply.body
    values = [(["enabled"] if hook[field] else []) if field == "enabled" else hook[field] for field, _id in FORM]
    return *values, hook["id"], f"Edit webhook {hook['id']}", False, None, meta


@dash.callback(
    Output("webhook-message", "children", allow_duplicate=True), Output("webhooks-version", "data"),
    Output("webhook-select", "value", allow_duplicate=True), Output("account-meta", "data", allow_duplicate=True),
    Input("webhook-create", "n_clicks"), Input("webhook-save", "n_clicks"),
    *[State(control_id, "value") for _field, control_id in FORM],
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
    body, empty = _body(values)
    if empty:
        return ui.error_box("Fill in: " + "; ".join(empty) + "."), dash.no_update, dash.no_update, dash.no_update
    if saving:
        reply, problem, meta = ui.call(session, "update_webhook", {"webhook_id": editing, **body})
        if reply is None:
            return problem, dash.no_update, dash.no_update, meta
        return _done(f"Saved webhook {editing}."), (version or 0) + 1, editing, meta
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
    Output("webhooks-version", "data", allow_duplicate=True), Output("account-meta", "data", allow_duplicate=True),
    Output("webhook-test-pending", "data"), Output("webhook-test-poll", "disabled"),
    Output("webhook-test-poll", "n_intervals"), Output("webhook-test-poll", "interval"),
    Input("webhook-test", "n_clicks"), Input("webhook-rotate", "n_clicks"),
    Input("webhook-confirm-delete", "submit_n_clicks"),
    State("webhook-select", "value"), State("webhooks-version", "data"), State("session", "data"),
    prevent_initial_call=True,
)
def act(_test, _rotate, _delete, selected, version, session):
    """Send a test delivery, rotate the secret, or delete (after the confirmation). A test the
    worker will send starts following the delivery log (`follow_test`)."""
    if not ui.key_of(session) or not ui.clicked():
        raise dash.exceptions.PreventUpdate
    keep = (dash.no_update,) * 4  # a test being followed goes on
    stop = (None, True, 0, TEST_POLL_SCHEDULE[0] * 1000)
    if not selected:
        return ui.error_box("Choose a webhook first."), dash.no_update, dash.no_update, *keep
    name = {"webhook-test": "test_webhook", "webhook-rotate": "rotate_webhook_secret",
            "webhook-confirm-delete": "delete_webhook"}[dash.ctx.triggered_id]
    reply, problem, meta = ui.call(session, name, {"webhook_id": selected})
    if reply is None:
        return problem, dash.no_update, meta, *keep
    if name == "delete_webhook":
        return _done(f"Deleted webhook {selected}."), (version or 0) + 1, meta, *stop
    if name == "rotate_webhook_secret":
        return _secret(f"New secret for webhook {selected}; the old one no longer signs.", reply.body["secret"]), \
            dash.no_update, meta, *keep
    attempt, delivery_id = reply.body.get("attempt"), reply.body.get("delivery_id")
    if attempt is not None or not delivery_id:  # sent already (an API that sends it in the request)
        return _test_outcome(attempt), (version or 0) + 1, meta, *stop
    pending = {"webhook": selected, "delivery_id": delivery_id, "since": time.time()}
    return _queued(delivery_id, 0), (version or 0) + 1, meta, pending, False, 0, TEST_POLL_SCHEDULE[0] * 1000


@dash.callback(
    Output("webhook-message", "children", allow_duplicate=True),
    Output("webhooks-version", "data", allow_duplicate=True), Output("account-meta", "data", allow_duplicate=True),
    Output("webhook-test-pending", "data", allow_duplicate=True),
    Output("webhook-test-poll", "disabled", allow_duplicate=True), Output("webhook-test-poll", "interval",
                                                                           allow_duplicate=True),
    Input("webhook-test-poll", "n_intervals"),
    State("webhook-test-pending", "data"), State("webhooks-version", "data"), State("session", "data"),
    prevent_initial_call=True,
)
def follow_test(polls, pending, version, session):
    """One read of the delivery log while a test delivery is queued: its outcome once an attempt
    of it is there; the next read scheduled otherwise, until TEST_FOLLOW_SECONDS have passed."""
    if not pending or not polls or not ui.key_of(session):
        raise dash.exceptions.PreventUpdate
    stop = (None, True, TEST_POLL_SCHEDULE[0] * 1000)
    reply, problem, meta = ui.call(session, "list_webhook_deliveries",
                                   {"webhook_id": pending["webhook"], "limit": LOG_PAGE})
    if reply is None:
        return problem, dash.no_update, meta, *stop
    attempts = [d for d in reply.body["deliveries"] if d.get("delivery_id") == pending["delivery_id"]]
    if attempts:  # newest first: the latest word on it
        return _test_outcome(_as_attempt(attempts[0])), (version or 0) + 1, meta, *stop
    waited = time.time() - float(pending.get("since") or 0)
    if polls >= len(TEST_POLL_SCHEDULE) or waited >= TEST_FOLLOW_SECONDS + 5:
        return (html.P(f"The test delivery {pending['delivery_id']} is still queued after {waited:.0f} s: is the "
                       "alert worker (python -m service worker) running? Its outcome will appear in the delivery "
                       "log below.", className="error", role="alert"),
                (version or 0) + 1, meta, *stop)
    return _queued(pending["delivery_id"], waited), dash.no_update, meta, dash.no_update, False, \
        TEST_POLL_SCHEDULE[polls] * 1000


def _queued(delivery_id: str, waited: float) -> html.P:
    return html.P(f"Test delivery {delivery_id} queued: the alert worker sends it within seconds. Waiting for its "
                  f"outcome… ({waited:.0f} s)", className="notice pending", role="status", id="webhook-test-queued")


def _as_attempt(logged: dict[str, Any]) -> dict[str, Any]:
    """A delivery-log item in the shape of the API's immediate test answer's `attempt`."""
    return {"succeeded": logged.get("outcome") == "succeeded", "status_code": logged.get("status_code"),
            "duration_ms": logged.get("duration_ms"), "error": logged.get("error"),
            "outcome": logged.get("outcome")}


def _test_outcome(attempt: dict[str, Any] | None) -> html.P:
    if attempt is None:
        return _done("The test delivery is being sent by the alert worker; see the delivery log.")
    if attempt.get("succeeded"):
        return _done(f"Test delivery sent: your URL answered {attempt.get('status_code')} "
                     f"in {attempt.get('duration_ms')} ms.")
    why = f"it answered {attempt['status_code']}" if attempt.get("status_code") else attempt.get("error") or "failed"
    later = {"disabled": "the webhook is now disabled (410 Gone)", "failed": "it will not be retried"}.get(
        attempt.get("outcome") or "", "it will be retried like any delivery")
    return html.P(f"The test delivery did not get through ({why}); {later}.", className="error", role="alert")


@dash.callback(
    Output("webhook-log", "children"), Output("webhook-log-cursor", "data"), Output("webhook-older", "hidden"),
    Output("account-meta", "data", allow_duplicate=True),
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
