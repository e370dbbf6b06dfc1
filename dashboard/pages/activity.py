"""/activity: keyword-list changes, adds, removes and edits (GET /keyword-activity)."""

from __future__ import annotations

import dash

from dashboard import api, figures, ui
from dashboard.chart_page import ChartPage, Drawn, Param

dash.register_page(__name__, path="/activity", title="Activity · Signals", name="Activity")

COLUMNS = ["keyword", "adds", "removes", "edits", "net_adds", "unique_users"]


def _draw(replies, _values) -> Drawn:
    body = replies[0].body
    return Drawn(figures.activity_figure(body, total=replies[0].total_rows),
                 ui.records_table(body["keywords"], COLUMNS, ui.measures(api.operation("keyword_activity")),
                                   table_id="activity-rows"))


PAGE = ChartPage(prefix="activity", operation="keyword_activity", title="Keyword list activity",
                 controls=(Param("window"), Param("type"), Param("limit")), draw=_draw,
                 # six counts, each with its change and previous value: too wide beside the graph
                 stacked=True)
PAGE.register()
layout = PAGE.layout
