"""Following a test delivery. "Send test" queues a delivery that the worker process sends (the API
answers 202 with its `delivery_id` and no attempt yet). While it is queued, the page reads the delivery log (`dcc.Interval`, a few
reads over about TEST_FOLLOW_SECONDS, each a short callback: no server thread waits) until an
attempt of that delivery appears, and then says how it went."""

from __future__ import annotations

import time
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from dashboard import ui
from dashboard.webhooks import LOG_PAGE

# Seconds between reads of the delivery log while a test delivery is queued (the worker looks for
# due deliveries every second); about TEST_FOLLOW_SECONDS in all, 8 reads of the plan's budget.
TEST_POLL_SCHEDULE = (1, 2, 3, 4, 5, 5, 5, 5)
TEST_FOLLOW_SECONDS = sum(TEST_POLL_SCHEDULE)
# The poll's outputs that stop following: (pending, disabled, n_intervals, interval)
STOP = (None, True, 0, TEST_POLL_SCHEDULE[0] * 1000)


def elements() -> list[Any]:
    """The test being followed and the timer of the log's reads (in the webhooks section)."""
    return [dcc.Store(id="webhook-test-pending"),
            dcc.Interval(id="webhook-test-poll", interval=TEST_POLL_SCHEDULE[0] * 1000, n_intervals=0, disabled=True)]


def started(reply_body: dict[str, Any], webhook_id: str) -> tuple[Any, tuple]:
    """test_webhook's answer: (the message, the poll's outputs following the queued delivery)."""
    delivery_id = reply_body.get("delivery_id")
    if not delivery_id:  # nothing to follow: say where to look
        return outcome(None), STOP
    pending = {"webhook": webhook_id, "delivery_id": delivery_id, "since": time.time()}
    return queued(delivery_id, 0), (pending, False, 0, TEST_POLL_SCHEDULE[0] * 1000)


@dash.callback(
    Output("webhook-message", "children", allow_duplicate=True),
    Output("webhooks-version", "data", allow_duplicate=True), Output("webhooks-meta", "data", allow_duplicate=True),
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
        return outcome(as_attempt(attempts[0])), (version or 0) + 1, meta, *stop
    waited = time.time() - float(pending.get("since") or 0)
    if polls >= len(TEST_POLL_SCHEDULE) or waited >= TEST_FOLLOW_SECONDS + 5:
        return (html.P(f"The test delivery {pending['delivery_id']} is still queued after {waited:.0f} s: is the "
                       "alert worker (python -m service worker) running? Its outcome will appear in the delivery "
                       "log below.", className="error", role="alert"),
                (version or 0) + 1, meta, *stop)
    return queued(pending["delivery_id"], waited), dash.no_update, meta, dash.no_update, False, \
        TEST_POLL_SCHEDULE[polls] * 1000


def queued(delivery_id: str, waited: float) -> html.P:
    return html.P(f"Test delivery {delivery_id} queued: the alert worker sends it within seconds. Waiting for its "
                  f"outcome… ({waited:.0f} s)", className="notice pending", role="status", id="webhook-test-queued")


def as_attempt(logged: dict[str, Any]) -> dict[str, Any]:
    """A delivery-log item in the shape of the API's immediate test answer's `attempt`."""
    return {"succeeded": logged.get("outcome") == "succeeded", "status_code": logged.get("status_code"),
            "duration_ms": logged.get("duration_ms"), "error": logged.get("error"),
            "outcome": logged.get("outcome")}


def outcome(attempt: dict[str, Any] | None) -> html.P:
    """How a test delivery went, in words."""
    if attempt is None:
        return ui.notice("The test delivery is being sent by the alert worker; see the delivery log.")
    if attempt.get("succeeded"):
        return ui.notice(f"Test delivery sent: your URL answered {attempt.get('status_code')} "
                         f"in {attempt.get('duration_ms')} ms.")
    why = f"it answered {attempt['status_code']}" if attempt.get("status_code") else attempt.get("error") or "failed"
    later = {"disabled": "the webhook is now disabled (410 Gone)", "failed": "it will not be retried"}.get(
        attempt.get("outcome") or "", "it will be retried like any delivery")
    return html.P(f"The test delivery did not get through ({why}); {later}.", className="error", role="alert")
