"""/domains: one or several domains over time (GET /domain-timeseries, one call each)."""

from __future__ import annotations

import dash

from dashboard import api, series, ui

dash.register_page(__name__, path="/domains", title="Domains · Signals", name="Domains")


def _trending(session: dict, window: str) -> list[str]:
    # the domains growing fastest over a comparable window, else a well-known one
    trend_window = window if window in api.operation("trending").param("window").enum else "30d"
    body = api.fetch(ui.key_of(session), "trending",
                     {"window": trend_window, "dimension": "domain", "limit": 3, "min_baseline": 0}).body
    return [t["value"] for t in body["trending"]] or ["reddit.com"]


PAGE = series.page("domains", "domain_timeseries", "domain", "Domains over time", "reddit.com, youtube.com", _trending)
PAGE.register()
layout = PAGE.layout
