"""Pieces every page uses: controls built from the OpenAPI document, the disclaimer and as_of
footer, error boxes, tables, and `answer`, which runs one page's API calls and turns any failure
into a message (and the header's rate-limit use into the shared `api-meta` store)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dash
from dash import Input, Output, dcc, html

from connectors import noise_marks, numbers
from connectors.client import Reply, SignalsError, rows_text
from connectors.columns import column_name
from connectors.operations import Parameter
from dashboard import api, view_state

COMPARE = "previous_period"
AS_OF_PLACEHOLDER = "latest, or YYYY-MM-DDTHH:00:00Z"
AS_OF_HINT = "An earlier UTC hour; empty: the latest."
GRAPH_CONFIG = {"displaylogo": False, "topojsonURL": "/assets/topojson/", "responsive": True,
                "modeBarButtonsToRemove": ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"]}


# Until a page's first answer: a blank 420 px space saying so, no empty axes.
WAITING = {"data": [], "layout": {"height": 420, "xaxis": {"visible": False}, "yaxis": {"visible": False},
                                  "annotations": [{"text": "Loading…", "showarrow": False, "x": 0.5, "y": 0.5,
                                                   "xref": "paper", "yref": "paper", "font": {"color": "#6b7280"}}]}}


def graph(graph_id: str, figure: dict | None = None) -> dcc.Loading:
    """A figure with a spinner while its callback runs; until then `figure` (WAITING)."""
    return dcc.Loading(dcc.Graph(id=graph_id, config=GRAPH_CONFIG, figure=figure or WAITING),
                       type="default", delay_show=150)


def radio(control_id: str, parameter: Parameter, label: str | None = None, query: Mapping[str, str] | None = None,
          default: Any = None) -> html.Div:
    """A parameter with a closed set of values: exactly the document's values, the URL's value
    (`query`, by the parameter's name) or else its default chosen (`default` when the document
    has none)."""
    values = parameter.enum or []
    value = view_state.pick(query or {}, parameter.name, values,
                            parameter.default if parameter.default is not None else default)
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
        label = f"{api.interval_words()} intervals".strip()
        switches.append(dcc.Checklist(id=f"{prefix}-intervals", options=[{"label": label, "value": "true"}],
                                      value=view_state.flag(query, "intervals", "true"), className="switch"))
    return html.Div([
        *switches,
        html.Div([
            html.Label("as of", htmlFor=f"{prefix}-as-of", className="control-label"),
            dcc.Input(id=f"{prefix}-as-of", type="text", value=view_state.text(query, "as_of", 40), debounce=True,
                      placeholder=AS_OF_PLACEHOLDER, className="text-input as-of-input"),
            html.Span(AS_OF_HINT, className="hint"),
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
    """A count's change as (text, class): "▲ 12.5 % · beyond noise" or "▼ 3.1 % · within noise"."""
    figure, verdict, kind = numbers.change_words(change)
    return (f"{figure} · {verdict}", kind) if figure else ("", "")


def _heading(column: str) -> str:
    """A column's heading: `country_name` -> "country", `unique_users` -> "users"."""
    return HEADINGS.get(column, column.removesuffix("_name").replace("_", " "))


HEADINGS = {"label": "place", "keyword_count": "keywords", "unique_users": "users", "users_est": "users", "geo_key": "code",
            "keyword_raw": "keyword", "growth_pct": "growth", "net_adds": "net adds", "ts": "time (UTC)"}


def _mark(mark: noise_marks.Mark | None) -> Any:
    return html.Span(mark.label, title=mark.text, className="mark") if mark else None


def _count_cell(row: Mapping[str, Any], column: str, marks: Mapping[str, noise_marks.Mark], compared: bool,
                level: str | None) -> html.Td:
    """A count: its value (thousands separators) and mark, then, smaller, its change and previous
    value (compare) and its interval (intervals; `level` "90 %", None without intervals), compact
    with the exact value on hover."""
    value = row.get(column)
    lines: list[Any] = [html.Div([html.Span(numbers.exact(value), className="value"), _mark(marks.get(column))],
                                 className="cell-main")]
    previous = (row.get("previous") or {}).get(column) if compared else None
    if compared and value == 0 and previous == 0:
        # Nothing to compare: one short line, no verdict on a change that is not there.
        lines.append(html.Div("0 before too", title="previous period: 0", className="sub",
                              **{"data-col": column_name("previous", column)}))
    elif compared:
        change = (row.get("change") or {}).get(column)
        figure, verdict, kind = numbers.change_words(change, value)
        before = html.Span(numbers.short(previous), title=f"previous period: {numbers.exact(previous)}",
                           **{"data-col": column_name("previous", column)}) if previous is not None else None
        if figure:
            # Two short lines, each kept whole: the change from the value before, then the verdict
            # (and its mark). Narrow enough for six counts side by side without wrapping.
            shown = [html.Span("new" if (change or {}).get("pct") is None else figure), ", from " if
                     (change or {}).get("pct") is None else " from ", before] if before is not None else [figure]
            lines.append(html.Div(shown, className=f"sub change {kind}", **{"data-col": column_name("change", column)}))
            lines.append(html.Div([html.Span(verdict, className="verdict"), _mark(marks.get(column_name("change", column)))],
                                  className=f"sub verdict {kind}"))
        elif before is not None:
            lines.append(html.Div(["before ", before], className="sub"))
    if level is not None:
        low_high = (row.get("intervals") or {}).get(column)
        if low_high:
            lines.append(html.Div(f"{level or 'interval'}: {numbers.interval(low_high, brief=True)}",
                                  title=f"{level} interval: {numbers.interval(low_high)}".strip(), className="sub",
                                  **{"data-col": column_name("intervals", column)}))
    return html.Td(lines, className="count", title=numbers.exact(value), **{"data-col": column})


def records_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], counts: Sequence[str],
                  table_id: str | None = None, details: Mapping[str, str] | None = None) -> html.Table:
    """A table of the API's records that fits its box: one column per field (`columns`, the ones
    that matter first); a count (in `counts`) shows its value with thousands separators and, in
    smaller lines under it, its change and previous value (compare) and its interval at the
    document's level (intervals: "90 %"); a privacy mark (connectors.noise_marks) beside a number that reads oddly;
    `details` puts another field under a column's value (geo_key under the place's name)."""
    compared = any("previous" in r for r in rows)
    level = api.interval_words() if any("intervals" in r for r in rows) else None
    details = details or {}
    under = [part for part, on in (("its change and the previous period's value", compared),
                                   (f"its {level} interval".replace("  ", " "), level is not None)) if on]
    head = [html.Th(_heading(c), className="count" if c in counts or c.endswith("_pct") else None) for c in columns]
    body = []
    for row in rows:
        marks = noise_marks.marks(row, counts, level or "")
        cells = []
        for column in columns:
            if column in counts:
                cells.append(_count_cell(row, column, marks, compared, level))
                continue
            text = cell_text(row.get(column), column)
            extra = details.get(column)
            inner = [html.Div(text, className="cell-main")] + \
                ([html.Div(cell_text(row.get(extra)), className="sub", **{"data-col": extra})] if extra else [])
            kind = "count" if column.endswith("_pct") else "label"
            cells.append(html.Td(inner if extra else text, className=kind, title=text, **{"data-col": column}))
        body.append(html.Tr(cells))
    said = ([f"Under each count: {' and '.join(under)}."] if under else []) + \
        ([VERDICTS] if compared else []) + \
        ([noise_marks.LEGEND] if any(noise_marks.marks(r, counts, level or "") for r in rows) else [])
    caption = [html.Caption(" ".join(said), className="legend")] if said else []
    return html.Table([*caption, html.Thead(html.Tr(head)), html.Tbody(body)], className="data-table records",
                      **({"id": table_id} if table_id else {}))


# What a change's verdict means, said once where the table shows them (issue 42: a place "beyond
# noise" beside a "few users" mark, and one whose 90 % interval leaves out its previous value
# "within noise", confused a person reading the page). The test: docs/privacy.md "Comparing periods".
VERDICTS = ("'beyond noise': a change larger than the privacy noise and chance of both periods could make "
            "(tested at 1 in 1,000, stricter than a 90 % interval); 'within noise': it could be noise alone, "
            "not that nothing changed.")

SIGNED = ("growth_pct",)  # percentages that are changes


def cell_text(value: Any, column: str = "") -> str:
    """A field as a table shows it: numbers with thousands separators, a percentage (`*_pct`) with
    its sign when it is a change ("+250.3 %", else "75 %"), an ISO time as "2026-03-10 12:00",
    never Python's True/False."""
    if column.endswith("_pct") and isinstance(value, int | float) and not isinstance(value, bool):
        # a change or a growth is signed (+250.3 %); a setting such as a threshold is not (75 %)
        return numbers.percent(value) if column in SIGNED else f"{numbers.exact(value)} %"
    if isinstance(value, str) and len(value) >= 16 and value[10:11] == "T" and value.endswith("Z"):
        return value[:16].replace("T", " ")
    return numbers.exact(value)


def rows_said(shown: int, total: int | None, limit_control: str | None = None) -> str:
    """ "100 of 390 rows" (and how to see more) when the answer holds more rows than are shown,
    else "390 rows"."""
    text = rows_text(shown, total)
    if limit_control and total is not None and total > shown:
        text += f": the answer holds {total - shown:,} more; raise {limit_control} to see them"
    return text


def measures(operation: Any) -> list[str]:
    """The counts of an operation's records (the measures a figure can show)."""
    return list(operation.count_fields)


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


def error_box(message: str, problem: Mapping[str, Any] | None = None) -> html.Div:
    """A message for the viewer. For a failed call, `problem` is its problem in the API's shape
    (SignalsError.problem: the API's own, or connectors/problems.py's for no answer): its members
    go with the message as `data-problem-*` attributes, and its type, status and request id in the
    tooltip, so what the viewer reports is what the API said."""
    if not problem:
        return html.Div(message, className="error", role="alert")
    members = {f"data-problem-{name.replace('_', '-')}": str(value) for name, value in problem.items()
               if name in ("type", "title", "status", "detail", "request_id") and value is not None}
    said = " · ".join(str(problem[name]) for name in ("type", "status") if problem.get(name) is not None)
    if problem.get("request_id"):
        said += f" · request {problem['request_id']}"
    return html.Div(message, className="error", role="alert", title=said, **members)


def failure_box(error: SignalsError, *, needed_plan: str | None = None, message: str | None = None) -> html.Div:
    """A failed call: the sentence for the viewer (api.explain, or `message`) with its problem."""
    return error_box(message or api.explain(error, needed_plan=needed_plan), error.problem)


def notice(text: str) -> html.P:
    """Something done or to know (not an error)."""
    return html.P(text, className="notice", role="status")


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], table_id: str | None = None) -> html.Table:
    head = html.Thead(html.Tr([html.Th(c.replace("_", " ")) for c in columns]))
    body = html.Tbody([html.Tr([html.Td(cell_text(r.get(c), c), **{"data-col": c}) for c in columns]) for r in rows])
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
        return None, failure_box(error, needed_plan=needed_plan), meta(error=error)
    return reply, None, meta(reply)


def unavailable_layout(error: SignalsError) -> html.Div:
    """A page whose controls could not be built (the document did not come)."""
    return html.Div([html.H2("Signals is not available"), failure_box(error)], className="page")
