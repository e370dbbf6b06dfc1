"""/query: the flexible query (POST /query, for the plans its `x-min-tier` allows): filters,
group_by, bucket, order, limit, and as_of, compare and intervals (issue 25); the results as a
table (nested fields as columns, named as in the API's CSV) (and a chart for one dimension); CSV
through the API's own CSV (format=csv, its file name from Content-Disposition)."""

from __future__ import annotations

import re

import dash
from dash import Input, Output, State, dcc, html

from connectors.client import SignalsError
from dashboard import api, figures, ui, view_state

dash.register_page(__name__, path="/query", title="Query · Signals", name="Query")

ui.relay_meta("query-meta")

TEXT_FILTERS = ("keywords", "domains", "countries", "regions", "counties", "cities")
CLOSED_FILTERS = ("platforms", "page_contexts")
# The builder's fields in the URL (a query runs on its button, not on each change)
view_state.register("query", [("window", "query-window"), ("group_by", "query-group-by"),
                              ("bucket", "query-bucket"), ("order_by", "query-order-by"), ("order", "query-order"),
                              ("limit", "query-limit"), ("as_of", "query-as-of"), ("compare", "query-compare"),
                              ("intervals", "query-intervals")]
                    + [(name, f"query-filter-{name}") for name in (*TEXT_FILTERS, *CLOSED_FILTERS)])


def _listed(query: view_state.Query, name: str, values: list) -> list:
    """A comma-separated list from the URL, keeping only the values the control offers, in order."""
    given = [v for v in (query.get(name) or "").split(",") if v]
    return [v for v in given if v in values]


def layout(**query: str):
    try:
        op = api.operation("query")
    except SignalsError as error:
        return ui.unavailable_layout(error)
    filters = op.param("filters").schema.get("properties", {})
    group_by = op.param("group_by").schema
    return html.Div([
        html.H1("Query builder"),
        view_state.store("query"),
        html.P(f"Needs the {api.plan_label(op.min_tier)} plan or higher. "
               "Values within a filter are alternatives; filters combine."),
        html.Div(id="query-plan-note"),
        html.Div([ui.radio("query-window", op.param("window"), query=query),
                  html.Div([html.Label("group by (in this order)", htmlFor="query-group-by", className="control-label"),
                            dcc.Checklist(id="query-group-by", options=group_by["items"]["enum"],
                                          value=_listed(query, "group_by", group_by["items"]["enum"])
                                          or list(group_by.get("default", [])), inline=True, className="radio")],
                           className="control"),
                  ui.radio("query-bucket", op.param("bucket"), query=query),
                  ui.radio("query-order-by", op.param("order_by"), "order by", query=query),
                  ui.radio("query-order", op.param("order"), query=query),
                  ui.number("query-limit", op.param("limit"), query=query)], className="controls"),
        html.Div(_period_controls(op, query), className="controls"),
        html.Div([
            html.Div([html.Label(name.replace("_", " "), htmlFor=f"query-filter-{name}", className="control-label"),
                      dcc.Input(id=f"query-filter-{name}", type="text", value=view_state.text(query, name),
                                className="text-input",
                                placeholder=filters[name].get("description", "")[:60])], className="control")
            for name in TEXT_FILTERS if name in filters
        ] + [
            html.Div([html.Label(name.replace("_", " "), htmlFor=f"query-filter-{name}", className="control-label"),
                      dcc.Checklist(id=f"query-filter-{name}", options=filters[name]["items"]["enum"],
                                    value=_listed(query, name, filters[name]["items"]["enum"]),
                                    inline=True, className="radio")], className="control")
            for name in CLOSED_FILTERS if name in filters
        ], className="controls"),
        html.Div([html.Button("Run query", id="query-run", n_clicks=0, className="button"),
                  html.Button("Download CSV", id="query-csv", n_clicks=0, className="button"),
                  dcc.Download(id="query-download")], className="controls"),
        html.Div(id="query-status"), ui.page_meta("query-meta"),
        dcc.Loading(html.Div(id="query-results"), type="default"),
        ui.graph("query-graph", figure=NO_FIGURE),
    ], className="page")


_LABELS = {"previous_period": "previous period", True: "[low, high] for each count"}


def _period_controls(op, query: view_state.Query) -> list:
    """as_of, compare and intervals, as the document describes them; off unless the URL says."""
    controls = []
    if any(p.name == "as_of" for p in op.params):
        controls.append(html.Div([
            html.Label("as of", htmlFor="query-as-of", className="control-label"),
            dcc.Input(id="query-as-of", type="text", value=view_state.text(query, "as_of", 40), className="text-input",
                      placeholder="now, or a UTC hour: 2026-11-20T13:00:00Z"),
            html.Span("empty: the current as_of", className="hint")], className="control"))
    for name, values in (("compare", (op.param("compare").enum or []) if any(p.name == "compare" for p in op.params)
                          else []),
                         ("intervals", [True] if any(p.name == "intervals" for p in op.params) else [])):
        if values:
            controls.append(html.Div([
                html.Label(name, htmlFor=f"query-{name}", className="control-label"),
                dcc.Checklist(id=f"query-{name}", options=[{"label": _LABELS.get(v, str(v)), "value": v}
                                                            for v in values],
                              value=[v for v in values if query.get(name) == str(v).lower()], inline=True,
                              className="radio")], className="control"))
    return controls


# Until a query has run (and for answers a chart does not fit): no empty axes.
NO_FIGURE = {"data": [], "layout": {"height": 40, "xaxis": {"visible": False}, "yaxis": {"visible": False}}}


@dash.callback(Output("query-plan-note", "children"), Input("query-plan-note", "id"), State("session", "data"))
def plan_note(_page, session):
    """Said before the first click: the viewer's plan (known from sign-in) cannot run queries."""
    if not ui.key_of(session) or "query" in (session.get("operations") or []):
        return None
    needed = api.min_plan_label("query") or "a higher"
    return html.P(f"Your plan ({session.get('plan_label')}) does not include the query builder; it needs the "
                  f"{needed} plan or higher. The API will refuse these queries.", className="notice", role="status")


def _body(window, group_by, bucket, order_by, order, limit, texts, closed, fmt, as_of=None, compare=None,
          intervals=None):
    filters = {}
    for name, text in zip(TEXT_FILTERS, texts, strict=True):
        values = [v.strip() for v in re.split(r"[,\n]", text or "") if v.strip()]
        if values:
            filters[name] = values
    for name, chosen in zip(CLOSED_FILTERS, closed, strict=True):
        if chosen:
            filters[name] = list(chosen)
    body = {"window": window, "group_by": list(group_by or []), "order_by": order_by, "order": order,
            "limit": limit, "format": fmt}
    if bucket:
        body["bucket"] = bucket
    if filters:
        body["filters"] = filters
    if as_of and as_of.strip():
        body["as_of"] = as_of.strip()
    if compare:
        body["compare"] = compare[0]
    if intervals:
        body["intervals"] = True
    return {k: v for k, v in body.items() if v is not None}


_STATES = [State("query-window", "value"), State("query-group-by", "value"), State("query-bucket", "value"),
           State("query-order-by", "value"), State("query-order", "value"), State("query-limit", "value"),
           *[State(f"query-filter-{n}", "value") for n in TEXT_FILTERS],
           *[State(f"query-filter-{n}", "value") for n in CLOSED_FILTERS],
           State("query-as-of", "value"), State("query-compare", "value"), State("query-intervals", "value"),
           State("session", "data")]


@dash.callback(
    Output("query-status", "children"), Output("query-meta", "data"),
    Output("query-results", "children"), Output("query-graph", "figure"),
    Input("query-run", "n_clicks"), *_STATES, prevent_initial_call=True,
)
def run(_clicks, window, group_by, bucket, order_by, order, limit, *rest):
    *filters, as_of, compare, intervals, session = rest
    if not ui.key_of(session) or not _clicks:
        raise dash.exceptions.PreventUpdate
    if not window:
        return ui.error_box("Choose a window first: the API needs one."), dash.no_update, None, dash.no_update
    body = _body(window, group_by, bucket, order_by, order, limit, filters[:len(TEXT_FILTERS)],
                 filters[len(TEXT_FILTERS):], "json", as_of, compare, intervals)

    def render(replies):
        answer = replies[0].body
        rows = [ui.flat(r) for r in answer["results"]]
        columns = list(rows[0]) if rows else list(answer["group_by"])
        figure = figures.query_figure(answer, measure=order_by or "suppressions")
        return [ui.disclaimer_footer(answer.get("disclaimer"), ui.as_of_text(replies[0]))], \
            (html.Div([html.P(f"{len(answer['results'])} rows", className="hint", id="query-count"),
                       ui.table(rows, columns, table_id="query-rows")], className="side"),
             figure if figure is not None else NO_FIGURE)

    children, meta, out = ui.answer(session, [("query", body)], render, empty=(None, dash.no_update))
    return children, meta, *out


@dash.callback(
    Output("query-download", "data"), Output("query-status", "children", allow_duplicate=True),
    Output("query-meta", "data", allow_duplicate=True),
    Input("query-csv", "n_clicks"), *_STATES, prevent_initial_call=True,
)
def download(_clicks, window, group_by, bucket, order_by, order, limit, *rest):
    *filters, as_of, compare, intervals, session = rest
    if not ui.key_of(session) or not _clicks:
        raise dash.exceptions.PreventUpdate
    if not window:
        return None, ui.error_box("Choose a window first: the API needs one."), dash.no_update
    body = _body(window, group_by, bucket, order_by, order, limit, filters[:len(TEXT_FILTERS)],
                 filters[len(TEXT_FILTERS):], "csv", as_of, compare, intervals)
    reply, problem, meta = ui.call(session, "query", body)
    if reply is None:
        return None, problem, meta
    disposition = {k.lower(): v for k, v in reply.headers.items()}.get("content-disposition", "")
    match = re.search(r'filename="([^"]+)"', disposition)
    return dcc.send_string(reply.body, match.group(1) if match else "signals-query.csv"), dash.no_update, meta
