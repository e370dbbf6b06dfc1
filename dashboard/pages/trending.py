"""/trending: the fastest growing values (GET /trending) with every parameter as a control."""

from __future__ import annotations

import dash

from dashboard import figures, ui
from dashboard.chart_page import ChartPage, Drawn, Param

dash.register_page(__name__, path="/trending", title="Trending · Signals", name="Trending")


def _draw(replies, _values) -> Drawn:
    body = replies[0].body
    return Drawn(figures.trending_figure(body, total=replies[0].total_rows),
                 ui.records_table(body["trending"], ["value", "recent", "baseline", "growth_pct"],
                                   ["recent", "baseline"], table_id="trending-rows"))


PAGE = ChartPage(
    prefix="trending", operation="trending", title="Trending",
    controls=(Param("window"), Param("dimension"), Param("metric"), Param("min_baseline"), Param("limit")),
    # /trending compares a recent period with its baseline already: no compare switch, no intervals
    compare=False, intervals=False, draw=_draw)
PAGE.register()
layout = PAGE.layout
