"""Pieces every page uses: controls built from the OpenAPI document, the disclaimer and as_of
footer, error boxes, tables, and `answer`, which runs one page's API calls and turns any failure
into a message (and the header's rate-limit use into the shared `api-meta` store)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dash
from dash import Input, Output, dcc, html

from connectors.client import Reply, SignalsError
from connectors.operations import Parameter
from dashboard import api, view_state

COMPARE = "previous_period"
GRAPH_CONFIG = {"displaylogo": False, "topojsonURL": "/assets/topojson/", "responsive": True}


def graph(graph_id: str, figure: dict | None = None) -> dcc.Loading:
    """A figure with a spinner while its callback runs; until then `figure` (an empty 420 px plot)."""
    return dcc.Loading(dcc.Graph(id=graph_id, config=GRAPH_CONFIG, figure=figure or {"data": [], "layout": {"height": 420}}),
                       type="default", delay_show=150)


def radio(control_id: str, parameter: Parameter, label: str | None = None, query: Mapping[str, str] | None = None,
          ) -> html.Div:
    """A parameter with a closed set of values: exactly the document's values, the URL's value
    (`query`, by the parameter's name) or else its default chosen (none without a default)."""
    values = parameter.enum or []
    value = view_state.pick(query or {}, parameter.name, values, parameter.default)
    return choice(control_id, label or parameter.name.replace("_", " "), values, value)


def choice(control_id: str, label: str, values: Sequence[Any], default: Any) -> html.Div:
    return html.Div([
        html.Label(label, htmlFor=control_id, className="control-label"),
        dcc.RadioItems(id=control_id, options=[{"label": str(v), "value": v} for v in values],
                       value=default, inline=True, className="radio"),
    ], className="control")


def period_controls(prefix: str, query: Mapping[str, str], *, compare: bool = True, intervals: bool = True,
                    ) -> html.Div:
    """The "compare with previous period" and "intervals" switches and the "as of" picker, from
    the URL (`compare=previous_period`, `intervals=true`, `as_of=...`)."""
    switches = []
    if compare:
        switches.append(dcc.Checklist(id=f"{prefix}-compare", options=[{"label": "compare with previous period",
                                                                         "value": COMPARE}],
                                      value=view_state.flag(query, "compare", COMPARE), className="switch"))
    if intervals:
        switches.append(dcc.Checklist(id=f"{prefix}-intervals", options=[{"label": "90 % intervals", "value": "true"}],
                                      value=view_state.flag(query, "intervals", "true"), className="switch"))
    return html.Div([
        *switches,
        html.Div([
            html.Label("as of", htmlFor=f"{prefix}-as-of", className="control-label"),
            dcc.Input(id=f"{prefix}-as-of", type="text", value=view_state.text(query, "as_of", 40), debounce=True,
                      placeholder="now, or e.g. 2026-11-20T13:00:00Z", className="text-input as-of-input"),
            html.Span("An earlier UTC hour; empty: the latest.", className="hint"),
        ], className="control"),
    ], className="controls period-controls")


def period_arguments(compare: Sequence[str] | None = None, intervals: Sequence[str] | None = None,
                     as_of: str | None = None) -> dict[str, Any]:
    """The API's compare, intervals and as_of arguments for the switches' and picker's values."""
    out: dict[str, Any] = {}
    if compare:
        out["compare"] = COMPARE
    if intervals:
        out["intervals"] = True
    if as_of and as_of.strip():
        out["as_of"] = as_of.strip()
    return out


def change_text(change: Mapping[str, Any] | None) -> tuple[str, str]:
    """A count's change as (text, class): "+12.5 % · beyond noise" or "−3.1 % · within noise"."""
    if not change:
        return "", ""
    pct = change.get("pct")
    figure = "new (previously 0)" if pct is None else f"{pct:+.1f} %".replace("-", "−")
    if change.get("beyond_noise"):
        return f"{figure} · beyond noise", "beyond-noise"
    return f"{figure} · within noise", "within-noise"


def compared_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], measures_: Sequence[str],
                   table_id: str | None = None) -> html.Table:
    """A table of records; with compare, each measure is followed by its previous value and its
    change (marked beyond or within noise); with intervals, by its 90 % interval."""
    compared = any("previous" in r for r in rows)
    with_intervals = any("intervals" in r for r in rows)
    head: list[str] = []
    for column in columns:
        head.append(column.replace("_", " "))
        if column in measures_ and compared:
            head += [f"{column.replace('_', ' ')}, previous period", f"{column.replace('_', ' ')}, change"]
        if column in measures_ and with_intervals:
            head.append(f"{column.replace('_', ' ')}, 90 % interval")
    body = []
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            cells.append(html.Td("" if value is None else str(value), **{"data-col": column}))
            if column in measures_ and compared:
                previous = (row.get("previous") or {}).get(column)
                cells.append(html.Td("" if previous is None else str(previous), **{"data-col": f"previous_{column}"}))
                label, kind = change_text((row.get("change") or {}).get(column))
                cells.append(html.Td(label, className=kind, **{"data-col": f"change_{column}"}))
            if column in measures_ and with_intervals:
                low_high = (row.get("intervals") or {}).get(column)
                cells.append(html.Td(f"{low_high[0]}–{low_high[1]}" if low_high else "",
                                     **{"data-col": f"intervals_{column}"}))
        body.append(html.Tr(cells))
    return html.Table([html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)], className="data-table",
                      **({"id": table_id} if table_id else {}))


def measures(operation: Any) -> list[str]:
    """The integer fields of an operation's records (the measures a figure can show)."""
    props = operation.record_schema.get("properties", {})
    return [name for name, schema in props.items() if schema.get("type") == "integer" and name != "rank"]


def number(control_id: str, parameter: Parameter, label: str | None = None, query: Mapping[str, str] | None = None,
           ) -> html.Div:
    """A numeric parameter: the document's bounds, the URL's value (`query`) or else its default."""
    step = 1 if parameter.type == "integer" else "any"
    return html.Div([
        html.Label(label or parameter.name.replace("_", " "), htmlFor=control_id, className="control-label"),
        dcc.Input(id=control_id, type="number", value=view_state.number(query or {}, parameter.name, parameter),
                  min=parameter.minimum,
                  max=parameter.maximum, step=step, debounce=True, className="number"),
        html.Span(parameter.allowed(), className="hint"),
    ], className="control")


def disclaimer_footer(disclaimer: str | None, as_of: str | None) -> html.Div:
    return html.Div([
        html.Span(["Data as of ", html.Strong(as_of or "—", className="as-of")]),
        html.P(disclaimer or "", className="disclaimer"),
    ], className="page-footer")


def error_box(message: str) -> html.Div:
    return html.Div(message, className="error", role="alert")


def notice(text: str) -> html.P:
    """Something done or to know (not an error)."""
    return html.P(text, className="notice", role="status")


def flat(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A record with its nested fields as columns, named as the API's CSV names them:
    previous_suppressions, change_suppressions_pct, intervals_suppressions ("low–high")."""
    out: dict[str, Any] = {}
    for name, value in record.items():
        if isinstance(value, Mapping):
            out.update(flat(value, f"{prefix}{name}_"))
        elif isinstance(value, list) and len(value) == 2:
            out[f"{prefix}{name}"] = f"{value[0]}–{value[1]}"
        else:
            out[f"{prefix}{name}"] = value
    return out


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], table_id: str | None = None) -> html.Table:
    head = html.Thead(html.Tr([html.Th(c.replace("_", " ")) for c in columns]))
    body = html.Tbody([html.Tr([html.Td("" if r.get(c) is None else str(r.get(c)), **{"data-col": c})
                                for c in columns]) for r in rows])
    return html.Table([head, body], className="data-table", **({"id": table_id} if table_id else {}))


def as_of_text(reply: Reply) -> str | None:
    return reply.as_of.strftime("%Y-%m-%d %H:%M UTC") if reply.as_of else None


def meta(reply: Reply | None = None, error: SignalsError | None = None) -> dict[str, Any]:
    """What the shell needs from an answer: the rate-limit use and the status (401 signs out)."""
    headers = reply.headers if reply is not None else {}
    out = {"status": reply.status if reply is not None else (error.status if error else None),
           "at": time.time(), **api.Usage.from_headers(headers).as_dict()}
    if error is not None and error.status == 429 and not api.address_blocked(error):  # the plan's limit reached
        out.update(remaining=0, reset=error.retry_after)
    return out


def page_meta(store_id: str) -> dcc.Store:
    """A page's own store for the rate-limit use of its button callbacks, relayed to the shell's
    `api-meta`. Dash fires a callback with prevent_initial_call=True anyway when its inputs arrive
    with a page while one of its outputs was already on the screen (the shell's `api-meta`): a
    button's callback that wrote `api-meta` directly ran on every visit, unclicked, and held back
    the callbacks downstream of it. Writing to a store that comes with the page keeps it quiet."""
    return dcc.Store(id=store_id)


def relay_meta(store_id: str) -> None:
    """Register the relay of a page's `page_meta` store to the shell's `api-meta` (at import)."""
    @dash.callback(Output("api-meta", "data", allow_duplicate=True), Input(store_id, "data"), prevent_initial_call=True)
    def relay(meta: dict[str, Any] | None) -> dict[str, Any]:
        if not meta:
            raise dash.exceptions.PreventUpdate
        return meta


def clicked() -> bool:
    """The callback runs because a button was pressed (a click count above 0), not because its
    page was drawn."""
    return any(t.get("value") for t in dash.ctx.triggered or [])


def key_of(session: Mapping[str, Any] | None) -> str | None:
    return (session or {}).get("key") or None


def answer(session: Mapping[str, Any] | None, calls: Sequence[tuple[str, Mapping[str, Any]]],
           render: Callable[[list[Reply]], Any], *, needed_plan: str | None = None,
           empty: Any = None) -> tuple[Any, dict[str, Any], Any]:
    """Run the calls in order and render their replies. Returns (children, meta, figure-or-empty):
    on a failure the children are the message, the figure `empty`. The key is only handed to the
    client."""
    replies: list[Reply] = []
    for name, arguments in calls:
        reply, problem, info = call(session, name, arguments, needed_plan=needed_plan)
        if reply is None:
            return problem, info, empty
        replies.append(reply)
    children, figure = render(replies)
    return children, meta(replies[-1] if replies else None), figure


def call(session: Mapping[str, Any] | None, name: str, arguments: Mapping[str, Any] | None = None, *,
         needed_plan: str | None = None) -> tuple[Reply | None, Any, dict[str, Any]]:
    """One call: (reply, None, meta) when it worked, (None, an error box, meta) when not; a 403
    names `needed_plan` (a label), by default the operation's own minimum plan as the API names it."""
    try:
        reply = api.fetch(key_of(session), name, arguments)
    except SignalsError as error:
        if error.status == 403 and needed_plan is None:
            needed_plan = api.min_plan_label(name)
        return None, error_box(api.explain(error, needed_plan=needed_plan)), meta(error=error)
    return reply, None, meta(reply)


def unavailable_layout(error: SignalsError) -> html.Div:
    """A page whose controls could not be built (the document did not come)."""
    return html.Div([html.H2("Signals is not available"), error_box(api.explain(error))], className="page")
