"""/: the overview: top keywords, what is trending now, totals (one /query with no grouping, for
the plans that may call it: the account's endpoints say which), and as_of."""

from __future__ import annotations

import dash
from dash import Input, Output, State, html

from connectors import numbers
from dashboard import api, figures, ui

dash.register_page(__name__, path="/", title="Overview · Signals", name="Overview")

WINDOW = "24h"


def layout(**_query: str) -> html.Div:
    return html.Div([
        html.H1("Overview"),
        html.P(f"The last {WINDOW}: what people suppress most, and what is growing fastest."),
        html.Div(id="overview-totals", className="cards"),
        html.Div([
            html.Div(ui.graph("overview-top-keywords"), className="half"),
            html.Div(ui.graph("overview-trending"), className="half"),
        ], className="row"),
        html.Div(id="overview-status"),
    ], className="page")


@dash.callback(
    Output("overview-status", "children"), Output("api-meta", "data", allow_duplicate=True),
    Output("overview-top-keywords", "figure"), Output("overview-trending", "figure"),
    Output("overview-totals", "children"),
    Input("overview-status", "id"), State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def load(_page: str, session: dict | None):
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate
    calls = [("top_keywords", {"window": WINDOW, "limit": 10}), ("trending", {"window": WINDOW, "limit": 10})]
    with_totals = "query" in (session.get("operations") or [])
    if with_totals:
        calls.append(("query", {"window": WINDOW}))

    def render(replies):
        top, trend = replies[0], replies[1]
        if with_totals:
            totals = replies[2].body["results"][0]
            cards = [html.Div([html.Div(numbers.exact(totals[m]), className="card-value", id=f"total-{m}"),
                               html.Div(m.replace("_", " "), className="card-label")], className="card")
                     for m in ("suppressions", "unique_users", "events")]
        else:
            cards = [html.P(f"Totals come from the flexible query, which needs the "
                            f"{api.min_plan_label('query') or 'a higher'} plan or higher.", className="hint")]
        first = top.body["keywords"][0] if top.body["keywords"] else None
        leader = html.P(["Most suppressed: ", html.Strong(first["keyword_raw"], id="overview-leader"), " (",
                         html.Span(numbers.exact(first["suppressions"]), id="overview-leader-count"), " suppressions)"]) \
            if first else None
        return [leader, ui.disclaimer_footer(top.body.get("disclaimer"), ui.as_of_text(top))], \
            (figures.top_keywords_figure(top.body, total=top.total_rows),
             figures.trending_figure(trend.body, total=trend.total_rows), cards)

    children, meta, figs = ui.answer(session, calls, render, empty=(dash.no_update, dash.no_update, None))
    return children, meta, *figs
