"""/keywords: one or several keywords over time (GET /keyword-timeseries, one call each)."""

from __future__ import annotations

import dash

from dashboard import api, series, ui

dash.register_page(__name__, path="/keywords", title="Keywords · Signals", name="Keywords")


def _top(session: dict, window: str) -> list[str]:
    # the most suppressed keywords of a comparable window (top-keywords has no 90d)
    top_window = window if window in api.operation("top_keywords").param("window").enum else "30d"
    body = api.fetch(ui.key_of(session), "top_keywords", {"window": top_window, "limit": 3}).body
    return [k["keyword_raw"] for k in body["keywords"]]


PAGE = series.page("keywords", "keyword_timeseries", "keyword", "Keywords over time", "climate change, spoilers", _top)
PAGE.register()
layout = PAGE.layout
