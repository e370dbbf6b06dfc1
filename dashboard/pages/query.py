"""/query: the flexible query (POST /query, for the plans its `x-min-tier` allows): filters,
group_by, bucket, order, limit, and as_of, compare and intervals; the results as a
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
        html.P("Filter, group and order the counts; values within a filter are alternatives, filters combine."),
        html.Div(id="query-plan-note"),
        html.Div([ui.radio("query-window", op.param("window"), query=query, default=_default_window(op)),
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
                                className="text-input", placeholder=_placeholder(name, filters[name]))],
                     className="control")
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
        # Folded (no height) until a run has a chart: no empty frame, and plotly still draws at the
        # box's width (in a box that is not displayed at all it would draw a strip).
        html.Div(ui.graph("query-graph", figure=NO_FIGURE), id="query-graph-box", className=FOLDED),
        dcc.Loading(html.Div(id="query-results"), type="default"),
    ], className="page")


FOLDED = "folded"
WINDOW = "7d"  # chosen when the page opens (the API has no default window for /query)
_EXAMPLES = {"keywords": "climate change, spoilers", "domains": "reddit.com, youtube.com", "countries": "US, DE"}


def _default_window(op) -> str | None:
    values = op.param("window").enum or []
    return op.param("window").default or (WINDOW if WINDOW in values else (values[0] if values else None))


def _placeholder(name: str, schema: dict) -> str:
    """A short example that fits the field: the document's own example (in its description's
    brackets: "(US-CA)") or a known one."""
    found = re.search(r"\(([^)]{1,24})\)", schema.get("description", ""))
    example = _EXAMPLES.get(name) or (found.group(1) if found else "")
    return f"e.g. {example}" if example else "comma-separated"


_LABELS = {"previous_period": "previous period", True: "[low, high] for each count"}


def _period_controls(op, query: view_state.Query) -> list:
    """as_of, compare and intervals, as the document describes them; off unless the URL says."""
    controls = []
    if any(p.name == "as_of" for p in op.params):
        controls.append(html.Div([
            html.Label("as of", htmlFor="query-as-of", className="control-label"),
            dcc.Input(id="query-as-of", type="text", value=view_state.text(query, "as_of", 40),
                      className="text-input as-of-input", placeholder=ui.AS_OF_PLACEHOLDER),
            html.Span(ui.AS_OF_HINT, className="hint")], className="control"))
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


@dash.callback(Output("query-plan-note", "children"), Output("query-meta", "data", allow_duplicate=True),
              Input("query-plan-note", "id"), State("session", "data"), prevent_initial_call="initial_duplicate")
def plan_note(_page, session):
    """Said before the first click: what the viewer's plan allows here (from GET /api/v1/account,
    which also gives the header its count of requests used)."""
    if not ui.key_of(session):
        raise dash.exceptions.PreventUpdate
    reply, problem, meta = ui.call(session, "account", {})
    if reply is None:
        return problem, meta
    return plan_sentence(reply.body, api.min_plan_label("query")), meta


def plan_sentence(account: dict, needed: str | None) -> html.P:
    """The viewer's plan and the query builder: included (with its limit), or which plan it needs."""
    plan = account.get("plan_label") or account.get("plan")
    if "query" in {e.get("operation") for e in account.get("endpoints", [])}:
        per_minute = account.get("requests_per_minute")
        limit = f", up to {per_minute:,} requests a minute" if isinstance(per_minute, int) else ""
        return html.P(f"Your plan ({plan}) includes the query builder{limit}.", className="hint", role="status")
    return html.P(f"Your plan ({plan}) does not include the query builder; it needs the {needed or 'a higher'} "
                  "plan or higher. The API will refuse these queries.", className="notice", role="status")


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
    Output("query-results", "children"), Output("query-graph", "figure"), Output("query-graph-box", "className"),
    Input("query-run", "n_clicks"), *_STATES, prevent_initial_call=True,
)
def run(_clicks, window, group_by, bucket, order_by, order, limit, *rest):
    *filters, as_of, compare, intervals, session = rest
    if not ui.key_of(session) or not _clicks:
        raise dash.exceptions.PreventUpdate
    if not window:
        return ui.error_box("Choose a window first: the API needs one."), dash.no_update, None, dash.no_update, FOLDED
    body = _body(window, group_by, bucket, order_by, order, limit, filters[:len(TEXT_FILTERS)],
                 filters[len(TEXT_FILTERS):], "json", as_of, compare, intervals)

    def render(replies):
        answer = replies[0].body
        columns, details = result_columns(answer)
        counts = list(api.operation("query").count_fields)
        total = replies[0].total_rows
        figure = figures.query_figure(answer, measure=order_by or "suppressions", as_of=replies[0].as_of, total=total)
        return [ui.disclaimer_footer(answer.get("disclaimer"), ui.as_of_text(replies[0]))], \
            (html.Div([html.P(ui.rows_said(len(answer["results"]), total, "limit"), className="hint",
                              id="query-count"),
                       ui.records_table(answer["results"], [*columns, *counts], counts, table_id="query-rows",
                                        details=details)], className="results"),
             figure if figure is not None else NO_FIGURE, FOLDED if figure is None else "")

    children, meta, out = ui.answer(session, [("query", body)], render, empty=(None, dash.no_update, dash.no_update))
    return children, meta, *out


def result_columns(answer: dict) -> tuple[list[str], dict[str, str]]:
    """The dimension columns of a /query answer in group_by order (a place by its name, its id
    under it; time as `ts`), and the details shown under them."""
    first = (answer.get("results") or [{}])[0]
    columns, details = [], {}
    for dim in answer.get("group_by", []):
        if dim == "time":
            columns.append("ts")
        elif f"{dim}_name" in first or f"{dim}_id" in first:
            columns.append(f"{dim}_name")
            details[f"{dim}_name"] = f"{dim}_id"
        else:
            columns.append(dim)
    return columns, details


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
