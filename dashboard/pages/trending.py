"""/trending: the fastest growing values (GET /trending) with every parameter as a control."""

from __future__ import annotations

import dash
from dash import Input, Output, State, html

from connectors.client import SignalsError
from dashboard import api, figures, ui, view_state

dash.register_page(__name__, path="/trending", title="Trending · Signals", name="Trending")
view_state.register("trending", [("window", "trending-window"), ("dimension", "trending-dimension"),
                                 ("metric", "trending-metric"), ("min_baseline", "trending-min-baseline"),
                                 ("limit", "trending-limit"), ("as_of", "trending-as-of")])


def layout(**query: str):
    try:
        op = api.operation("trending")
    except SignalsError as error:
        return ui.unavailable_layout(error)
    return html.Div([
        html.H1("Trending"),
        view_state.store("trending"),
        html.Div([ui.radio("trending-window", op.param("window"), query=query),
                  ui.radio("trending-dimension", op.param("dimension"), query=query),
                  ui.radio("trending-metric", op.param("metric"), query=query),
                  ui.number("trending-min-baseline", op.param("min_baseline"), "min baseline", query=query),
                  ui.number("trending-limit", op.param("limit"), query=query)], className="controls"),
        # /trending compares a recent period with its baseline already: no compare switch, no intervals
        ui.period_controls("trending", query, compare=False, intervals=False),
        html.Div([html.Div(ui.graph("trending-graph"), className="half"),
                  html.Div(id="trending-table", className="side")], className="row"),
        html.Div(id="trending-status"),
    ], className="page")


@dash.callback(
    Output("trending-status", "children"), Output("api-meta", "data", allow_duplicate=True),
    Output("trending-graph", "figure"), Output("trending-table", "children"),
    Input("trending-window", "value"), Input("trending-dimension", "value"), Input("trending-metric", "value"),
    Input("trending-min-baseline", "value"), Input("trending-limit", "value"), Input("trending-as-of", "value"),
    State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def load(window, dimension, metric, min_baseline, limit, as_of, session):
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate
    arguments = {"window": window, "dimension": dimension, "metric": metric, "min_baseline": min_baseline,
                 "limit": limit, **ui.period_arguments(as_of=as_of)}

    def render(replies):
        body = replies[0].body
        rows = ui.table(body["trending"], ["value", "recent", "baseline", "growth_pct"], table_id="trending-rows")
        return [ui.disclaimer_footer(body.get("disclaimer"), ui.as_of_text(replies[0]))], \
            (figures.trending_figure(body), rows)

    children, meta, out = ui.answer(session, [("trending", arguments)], render, empty=(dash.no_update, None))
    return children, meta, *out
