"""/trending: the fastest growing values (GET /trending) with every parameter as a control."""

from __future__ import annotations

import dash
from dash import Input, Output, State, html

from connectors.client import SignalsError
from dashboard import api, figures, ui

dash.register_page(__name__, path="/trending", title="Trending · Signals", name="Trending")


def layout(**_query: str):
    try:
        op = api.operation("trending")
    except SignalsError as error:
        return ui.unavailable_layout(error)
    return html.Div([
        html.H1("Trending"),
        html.Div([ui.radio("trending-window", op.param("window")), ui.radio("trending-dimension", op.param("dimension")),
                  ui.radio("trending-metric", op.param("metric")),
                  ui.number("trending-min-baseline", op.param("min_baseline"), "min baseline"),
                  ui.number("trending-limit", op.param("limit"))], className="controls"),
        html.Div([html.Div(ui.graph("trending-graph"), className="half"),
                  html.Div(id="trending-table", className="side")], className="row"),
        html.Div(id="trending-status"),
    ], className="page")


@dash.callback(
    Output("trending-status", "children"), Output("api-meta", "data", allow_duplicate=True),
    Output("trending-graph", "figure"), Output("trending-table", "children"),
    Input("trending-window", "value"), Input("trending-dimension", "value"), Input("trending-metric", "value"),
    Input("trending-min-baseline", "value"), Input("trending-limit", "value"), State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def load(window, dimension, metric, min_baseline, limit, session):
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate
    arguments = {"window": window, "dimension": dimension, "metric": metric, "min_baseline": min_baseline,
                 "limit": limit}

    def render(replies):
        body = replies[0].body
        rows = ui.table(body["trending"], ["value", "recent", "baseline", "growth_pct"], table_id="trending-rows")
        return [ui.disclaimer_footer(body.get("disclaimer"), ui.as_of_text(replies[0]))], \
            (figures.trending_figure(body), rows)

    children, meta, out = ui.answer(session, [("trending", arguments)], render, empty=(dash.no_update, None))
    return children, meta, *out
