"""Figures as pure functions of the API's JSON: a body (dict) in, a `go.Figure` out.

Nothing here calls the API, reads settings or knows Dash; tests/dashboard/test_dashboard_figures.py calls
them with recorded bodies. Every figure says in its title what is counted; the numbers are the
API's estimates as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from connectors import numbers
from connectors.buckets import partial_note

ACCENT = "#3563c9"
_PALETTE = ("#3563c9", "#d9822b", "#2e9d5b", "#c9463d", "#7b5ea7", "#8c6d31", "#d45087", "#5f7f8f")
# The toolbar (zoom, download) stands upright in the right margin, off the title; numbers on the
# axes and in hovers carry thousands separators.
_LAYOUT = dict(template="plotly_white", margin=dict(l=10, r=44, t=56, b=10), height=420,
               font=dict(family="system-ui, sans-serif", size=13), separators=".,",
               modebar=dict(orientation="v", bgcolor="rgba(255,255,255,0.7)"))
COUNT_TICKS = ",~r"  # d3-format: axis numbers with thousands separators (2,000), no trailing zeros
TOP = 20  # bars a ranking draws; the rest are summarised under the chart
LABEL = 28  # characters of a bar's label; the whole label is in its hover


def short(label: Any) -> str:
    """A bar's label cut to LABEL characters ("Congo, The Democratic Rep…")."""
    text = str(label)
    return text if len(text) <= LABEL else text[:LABEL - 1].rstrip() + "…"


def _empty(title: str, message: str) -> go.Figure:
    figure = go.Figure(layout=dict(**_LAYOUT, title=title))
    figure.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return figure


def part_of(shown: int, total: int | None) -> str:
    """ "the first 10 of 390" when the answer holds more rows than are drawn (Signals-Total-Rows),
    else ""."""
    return f"the first {shown:,} of {total:,}" if total is not None and total > shown else ""


def _in_table(rows: int, total: int) -> str:
    """Where the rows not drawn are: "the rest in the table", or "50 in the table" when the
    answer holds more than the table (its limit cut it)."""
    return "the rest in the table" if total <= rows else f"{rows:,} in the table"


def top_keywords_figure(body: Mapping[str, Any], *, measure: str = "suppressions", total: int | None = None,
                        ) -> go.Figure:
    """The most suppressed keywords, largest on top; `total`, the keywords the answer holds in all
    (Signals-Total-Rows): the title says "the first 10 of 390" when more were left out."""
    rows = list(body.get("keywords", []))
    title = f"Top keywords by {measure} ({body.get('window')})"
    if not rows:
        return _empty(title, "No keyword passed the privacy threshold in this window.")
    if part_of(len(rows), total):
        title += f"<br><sup>{part_of(len(rows), total)} keywords</sup>"
    rows = rows[::-1]  # plotly draws the first category at the bottom
    figure = go.Figure(go.Bar(x=[r[measure] for r in rows], y=[short(r["keyword_raw"]) for r in rows],
                              orientation="h", marker_color=ACCENT, customdata=[r["keyword_raw"] for r in rows],
                              hovertemplate="%{customdata}: %{x:,}<extra></extra>"))
    figure.update_layout(**_LAYOUT, title=title)
    figure.update_yaxes(automargin=True)
    figure.update_xaxes(tickformat=COUNT_TICKS)
    figure.update_layout(height=max(300, 24 * len(rows) + 90))
    return figure


def timeseries_figure(bodies: Sequence[Mapping[str, Any]], *, subject: str = "keyword",
                      measure: str = "suppressions", as_of: Any = None, interval_words: str = "") -> go.Figure:
    """One line per keyword (or domain) over time; `bodies` are the answers, one per subject.
    With compare, each line's previous period (each bucket's value one window earlier) is a
    dotted line of the same colour; with intervals, a band holds each point's interval
    (`interval_words`: its level as the document gives it, "90 %").
    A first or last bucket the window covers only in part (`as_of`: the answer's, from its
    header) is drawn as an open marker, "partial: 6 of 24 hours" in its hover."""
    title = f"{measure.capitalize()} over time, by {subject}"
    if not bodies:
        return _empty(title, f"Enter one or more {subject}s.")
    figure = go.Figure()
    for index, body in enumerate(bodies):
        points = body.get("timeseries", [])
        colour = _PALETTE[index % len(_PALETTE)]
        name = str(body.get(subject))
        x = [p["ts"] for p in points]
        if any("intervals" in p for p in points):
            figure.add_trace(go.Scatter(x=x + x[::-1], y=[p["intervals"][measure][1] for p in points]
                                        + [p["intervals"][measure][0] for p in points][::-1],
                                        fill="toself", fillcolor=colour, opacity=0.15, line=dict(width=0),
                                        name=f"{name}, {interval_words} interval".replace("  ", " "),
                                        hoverinfo="skip"))
        partial = [partial_note(p["ts"], body.get("bucket"), body.get("window"), as_of) for p in points]
        y = [p[measure] for p in points]
        figure.add_trace(go.Scatter(x=x, y=[None if note else v for v, note in zip(y, partial, strict=True)],
                                    mode="lines+markers", name=name, line=dict(color=colour), marker=dict(size=4),
                                    hovertemplate="%{y:,}"))
        if any(partial):
            figure.add_trace(_partial_edges(x, y, partial, colour, name))
        if any("previous" in p for p in points):
            figure.add_trace(go.Scatter(x=x, y=[p["previous"][measure] for p in points], mode="lines",
                                        name=f"{name}, previous period", line=dict(color=colour, dash="dot")))
    first = bodies[0]
    title = f"{title} ({first.get('window')}, per {first.get('bucket')})"
    if any(partial_note(p["ts"], b.get("bucket"), b.get("window"), as_of) for b in bodies for p in b.get("timeseries", [])):
        title += "<br><sup>○ a bucket the window covers only in part (its count is of those hours only)</sup>"
    figure.update_layout(**_LAYOUT, title=title, legend=dict(orientation="h", y=-0.15), hovermode="x unified")
    figure.update_yaxes(tickformat=COUNT_TICKS)
    return figure


def _partial_edges(x: list, y: list, partial: list[str | None], colour: str, name: str) -> go.Scatter:
    """The buckets the window covers only in part: each an open circle joined to its whole neighbour
    by a dashed line (its count is of fewer hours, not a fall), "partial: 6 of 24 hours" in its hover."""
    xs: list = []
    ys: list = []
    notes: list = []
    for i, note in enumerate(partial):
        if not note:
            continue
        j = i + 1 if i + 1 < len(partial) and not partial[i + 1] else i - 1
        if 0 <= j < len(partial) and not partial[j]:
            xs += [x[j], x[i], None]
            ys += [y[j], y[i], None]
            notes += ["", note, ""]
        else:
            xs += [x[i], None]
            ys += [y[i], None]
            notes += [note, ""]
    return go.Scatter(x=xs, y=ys, mode="lines+markers", name=f"{name}, partial bucket", showlegend=False,
                      line=dict(color=colour, dash="dash", width=1.5), customdata=notes,
                      marker=dict(size=[9 if n else 0 for n in notes], symbol="circle-open", color=colour),
                      hovertemplate="%{y:,} %{customdata}<extra></extra>")


def geo_figure(body: Mapping[str, Any], coordinates: Mapping[str, tuple[float, float]],
               *, iso3: Mapping[str, str] | None = None, measure: str = "suppressions") -> go.Figure:
    """Countries as filled areas (`iso3`: alpha-2 -> alpha-3); regions, counties and cities as
    points sized by the measure at `coordinates` (geo_key -> lat, lon). Places without
    coordinates are left out of the map (the table beside it has them all)."""
    rows = list(body.get("regions", []))
    level = body.get("level", "country")
    title = f"{measure.capitalize()} by {level} ({body.get('window')})"
    if not rows:
        return _empty(title, "No place passed the privacy threshold in this window.")
    geo = dict(showframe=False, showcoastlines=True, coastlinecolor="#999", showland=True, landcolor="#f3f3f0",
               showcountries=True, countrycolor="#bbb", projection_type="natural earth", resolution=110,
               projection_rotation_lon=0, center=dict(lon=0, lat=20), lonaxis_range=[-180, 180])
    if level == "country":
        iso3 = iso3 or {}
        shown = [r for r in rows if r["geo_key"] in iso3]
        figure = go.Figure(go.Choropleth(
            locations=[iso3[r["geo_key"]] for r in shown], locationmode="ISO-3", z=[r[measure] for r in shown],
            text=[r["label"] for r in shown], colorscale="Blues", marker_line_color="#fff",
            colorbar=dict(thickness=14), hovertemplate="%{text}: %{z:,}<extra></extra>"))
    else:
        shown = [r for r in rows if r["geo_key"] in coordinates]
        biggest = max((r[measure] for r in shown), default=1) or 1
        figure = go.Figure(go.Scattergeo(
            lat=[coordinates[r["geo_key"]][0] for r in shown], lon=[coordinates[r["geo_key"]][1] for r in shown],
            text=[f"{r['label']}: {numbers.exact(r[measure])}" for r in shown], hoverinfo="text",
            marker=dict(size=[6 + 34 * (r[measure] / biggest) ** 0.5 for r in shown], color=ACCENT, opacity=0.6,
                        line=dict(width=0.5, color="#fff"), sizemode="diameter")))
        if shown and all(r["geo_key"].startswith("US") or level == "county" for r in shown):
            geo.update(scope="usa", projection_type="albers usa", center={}, lonaxis_range=None)
            geo.pop("projection_rotation_lon")
    figure.update_layout(**_LAYOUT, title=title, geo=geo)
    figure.update_layout(meta={"places": len(rows), "drawn": len(shown)})
    return figure


def trending_figure(body: Mapping[str, Any], total: int | None = None) -> go.Figure:
    """Growth of the fastest-growing values, recent period against the baseline; `total`, the
    values the answer holds in all (Signals-Total-Rows)."""
    rows = list(body.get("trending", []))
    title = (f"Fastest growing {body.get('dimension')} by {body.get('metric')}"
             f"<br><sup>{body.get('recent_period')} vs {body.get('baseline_period')}</sup>")
    if not rows:
        return _empty(title, "Nothing grew above the minimum baseline in this window.")
    total = total if total is not None and total > len(rows) else len(rows)
    if len(rows) > TOP:
        title = title.replace("</sup>", f"; the first {TOP} of {total:,}, {_in_table(len(rows), total)}</sup>")
    elif total > len(rows):
        title = title.replace("</sup>", f"; {part_of(len(rows), total)}</sup>")
    rows = rows[:TOP][::-1]
    figure = go.Figure(go.Bar(x=[r["growth_pct"] for r in rows], y=[short(r["value"]) for r in rows],
                              orientation="h", marker_color="#d9822b",
                              customdata=[[r["recent"], r["baseline"], str(r["value"])] for r in rows],
                              hovertemplate="%{customdata[2]}: %{x:+,.1f} % (recent %{customdata[0]:,}, "
                                            "baseline %{customdata[1]:,})<extra></extra>"))
    figure.update_layout(**_LAYOUT, title=title, xaxis_title="growth, %")
    figure.update_yaxes(automargin=True)
    figure.update_xaxes(tickformat=COUNT_TICKS)
    figure.update_layout(height=max(300, 24 * len(rows) + 90))
    return figure


def activity_figure(body: Mapping[str, Any], total: int | None = None) -> go.Figure:
    """Keyword-list changes per keyword: adds, removes and edits stacked; with compare, the
    previous period's as ghost bars beside them; `total`, the keywords the answer holds in all."""
    rows = list(body.get("keywords", []))
    title = f"Keyword list changes ({body.get('window')}, {body.get('type')})"
    if not rows:
        return _empty(title, "No keyword list change passed the privacy threshold in this window.")
    total = total if total is not None and total > len(rows) else len(rows)
    more = (f"the first {TOP} of {total:,}, {_in_table(len(rows), total)}" if len(rows) > TOP
            else part_of(len(rows), total))
    rows = rows[:TOP][::-1]
    compared = any("previous" in r for r in rows)
    figure = go.Figure()
    for field, colour in (("adds", "#2e9d5b"), ("removes", "#c9463d"), ("edits", "#8a8a8a")):
        figure.add_trace(go.Bar(name=field, x=[r[field] for r in rows], y=[short(r["keyword"]) for r in rows],
                                orientation="h", marker_color=colour, offsetgroup="now" if compared else None,
                                customdata=[r["keyword"] for r in rows],
                                hovertemplate=f"%{{customdata}}: %{{x:,}} {field}<extra></extra>"))
        if compared:
            figure.add_trace(go.Bar(name=f"{field}, previous period", x=[r["previous"][field] for r in rows],
                                    y=[short(r["keyword"]) for r in rows], orientation="h", marker_color=colour,
                                    opacity=0.35, offsetgroup="previous", customdata=[r["keyword"] for r in rows],
                                    hovertemplate=f"%{{customdata}}: %{{x:,}} {field} in the previous period"
                                                  "<extra></extra>"))
    notes = [n for n in ("beside the previous period (faint)" if compared else "", more) if n]
    if notes:
        title += f"<br><sup>{'; '.join(notes)}</sup>"
    figure.update_layout(**_LAYOUT, title=title, barmode="stack", legend=dict(orientation="h", y=-0.1))
    figure.update_layout(height=max(300, (40 if compared else 24) * len(rows) + 110))
    figure.update_yaxes(automargin=True)
    figure.update_xaxes(tickformat=COUNT_TICKS)
    return figure


# Counts that add up across rows (a row's events are in no other row); users do not (one person
# is in every row they were active in), so the rest of a ranking is summed only for these.
ADDITIVE = ("suppressions", "events", "adds", "removes", "edits", "total_events")


def query_figure(body: Mapping[str, Any], *, measure: str = "suppressions", as_of: Any = None,
                 total: int | None = None) -> go.Figure | None:
    """A /query answer grouped by one dimension: horizontal bars of the first TOP rows in the
    answer's order, long labels cut (whole in the hover), and the rest summarised under the chart;
    over time, a line with partial first and last buckets marked. None for other shapes (the
    table shows them). `total`: the rows the answer holds in all (Signals-Total-Rows), more than
    the table's when `limit` cut it."""
    group_by = list(body.get("group_by", []))
    rows = list(body.get("results", []))
    total = total if total is not None and total > len(rows) else len(rows)
    if len(group_by) != 1 or not rows:
        return None
    dim = group_by[0]
    title = f"{measure.replace('_', ' ').capitalize()} by {dim.replace('_', ' ')} ({body.get('window')})"
    if dim == "time":
        rows = sorted(rows, key=lambda r: r["ts"])
        partial = [partial_note(r["ts"], body.get("bucket"), body.get("window"), as_of) for r in rows]
        figure = go.Figure(go.Scatter(x=[r["ts"] for r in rows], y=[r[measure] for r in rows], mode="lines+markers",
                                      line_color=ACCENT, customdata=[note or "" for note in partial],
                                      marker=dict(size=[9 if n else 5 for n in partial],
                                                  symbol=["circle-open" if n else "circle" for n in partial]),
                                      hovertemplate="%{x}: %{y:,} %{customdata}<extra></extra>"))
        notes = [f"{part_of(len(rows), total)} buckets in the answer's order; a larger limit draws them all"
                 if total > len(rows) else "", "○ a bucket the window covers only in part" if any(partial) else ""]
        if any(notes):
            title += f"<br><sup>{'; '.join(n for n in notes if n)}</sup>"
        figure.update_layout(**_LAYOUT, title=title)
        figure.update_yaxes(tickformat=COUNT_TICKS)
        return figure
    shown, rest = rows[:TOP], rows[TOP:]
    shown = shown[::-1]  # the first row on top
    labels = [_group_label(r, dim) for r in shown]
    figure = go.Figure(go.Bar(x=[r[measure] for r in shown], y=[short(label) for label in labels], orientation="h",
                              marker_color=ACCENT, customdata=labels,
                              hovertemplate="%{customdata}: %{x:,}<extra></extra>"))
    if rest or total > len(rows):
        summary = f"and {len(rest):,} more in the table" if rest else ""
        if rest and measure in ADDITIVE:
            summary += f", {numbers.exact(sum(r[measure] for r in rest))} {measure} together"
        if total > len(rows):
            summary += ("; " if summary else "") + f"{total - len(rows):,} more with a larger limit"
        title += f"<br><sup>the first {len(shown)} of {total:,} rows; {summary}</sup>"
    figure.update_layout(**_LAYOUT, title=title)
    figure.update_layout(height=max(300, 24 * len(shown) + 110))
    figure.update_yaxes(automargin=True)
    figure.update_xaxes(tickformat=COUNT_TICKS)
    return figure


def _group_label(record: Mapping[str, Any], dim: str) -> str:
    """A row's value of a group_by dimension: the field named after it, or for a place level
    (country, region, county, city), whose records carry `<level>_id` and `<level>_name`, the name
    (the id when the API has none)."""
    if dim in record:
        return str(record[dim])
    return str(record.get(f"{dim}_name") or record.get(f"{dim}_id"))
