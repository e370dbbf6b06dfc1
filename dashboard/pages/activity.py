"""/activity: keyword-list changes, adds, removes and edits (GET /keyword-activity)."""

from __future__ import annotations

import dash
from dash import Input, Output, State, html

from connectors.client import SignalsError
from dashboard import api, figures, ui, view_state

dash.register_page(__name__, path="/activity", title="Activity · Signals", name="Activity")
view_state.register("activity", [("window", "activity-window"), ("type", "activity-type"), ("limit", "activity-limit"),
                                 ("compare", "activity-compare"), ("intervals", "activity-intervals"),
                                 ("as_of", "activity-as-of")])


def layout(**query: str):
    try:
        op = api.operation("keyword_activity")
    except SignalsError as error:
        return ui.unavailable_layout(error)
    return html.Div([
        html.H1("Keyword list activity"),
        view_state.store("activity"),
        html.Div([ui.radio("activity-window", op.param("window"), query=query),
                  ui.radio("activity-type", op.param("type"), query=query),
                  ui.number("activity-limit", op.param("limit"), query=query)], className="controls"),
        ui.period_controls("activity", query),
        html.Div([html.Div(ui.graph("activity-graph"), className="half"),
                  html.Div(id="activity-table", className="side")], className="row"),
        html.Div(id="activity-status"),
    ], className="page")


@dash.callback(
    Output("activity-status", "children"), Output("api-meta", "data", allow_duplicate=True),
    Output("activity-graph", "figure"), Output("activity-table", "children"),
    Input("activity-window", "value"), Input("activity-type", "value"), Input("activity-limit", "value"),
    Input("activity-compare", "value"), Input("activity-intervals", "value"), Input("activity-as-of", "value"),
    State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def load(window, kind, limit, compare, intervals, as_of, session):
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate

    def render(replies):
        body = replies[0].body
        rows = ui.compared_table(body["keywords"], ["keyword", "adds", "removes", "edits", "net_adds", "unique_users"],
                                 ui.measures(api.operation("keyword_activity")), table_id="activity-rows")
        return [ui.disclaimer_footer(body.get("disclaimer"), ui.as_of_text(replies[0]))], \
            (figures.activity_figure(body), rows)

    children, meta, out = ui.answer(session, [("keyword_activity", {"window": window, "type": kind, "limit": limit,
                                                                    **ui.period_arguments(compare, intervals, as_of)})],
                                    render, empty=(dash.no_update, None))
    return children, meta, *out
