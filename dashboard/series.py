"""The two "one or several subjects over time" pages (/keywords, /domains) differ only in the
endpoint and the subject; each page module calls `register` with its own."""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc, html

from connectors.client import SignalsError
from dashboard import api, figures, ui, view_state

MAX_SUBJECTS = 8


def layout(prefix: str, operation: str, subject: str, title: str, example: str, query: view_state.Query) -> html.Div:
    try:
        op = api.operation(operation)
    except SignalsError as error:
        return ui.unavailable_layout(error)
    return html.Div([
        html.H1(title),
        view_state.store(prefix),
        html.Div([
            html.Div([
                html.Label(f"{subject}s (comma-separated, up to {MAX_SUBJECTS})", htmlFor=f"{prefix}-subjects",
                           className="control-label"),
                dcc.Input(id=f"{prefix}-subjects", type="text", value=view_state.text(query, f"{subject}s"), placeholder=example, debounce=True,
                          className="text-input"),
                html.Span(f"Empty: the most suppressed {subject}s.", className="hint"),
            ], className="control"),
            ui.radio(f"{prefix}-window", op.param("window"), query=query),
            ui.radio(f"{prefix}-bucket", op.param("bucket"), query=query),
            ui.choice(f"{prefix}-measure", "measure", ui.measures(op),
                      view_state.pick(query, "measure", ui.measures(op), "suppressions")),
        ], className="controls"),
        ui.period_controls(prefix, query),
        ui.graph(f"{prefix}-graph"),
        html.Div(id=f"{prefix}-status"),
    ], className="page")


def register(prefix: str, operation: str, subject: str, default_subjects) -> None:
    """The page's one callback. `default_subjects(session, window)` gives the subjects shown when
    the box is empty."""
    view_state.register(prefix, [(f"{subject}s", f"{prefix}-subjects"), ("window", f"{prefix}-window"),
                                 ("bucket", f"{prefix}-bucket"), ("measure", f"{prefix}-measure"),
                                 ("compare", f"{prefix}-compare"), ("intervals", f"{prefix}-intervals"),
                                 ("as_of", f"{prefix}-as-of")])

    @dash.callback(
        Output(f"{prefix}-status", "children"), Output("api-meta", "data", allow_duplicate=True),
        Output(f"{prefix}-graph", "figure"),
        Input(f"{prefix}-subjects", "value"), Input(f"{prefix}-window", "value"), Input(f"{prefix}-bucket", "value"),
        Input(f"{prefix}-measure", "value"), Input(f"{prefix}-compare", "value"), Input(f"{prefix}-intervals", "value"),
        Input(f"{prefix}-as-of", "value"), State("session", "data"),
        prevent_initial_call="initial_duplicate",
    )
    def load(text: str | None, window: str, bucket: str, measure: str, compare, intervals, as_of,
             session: dict | None):
        if not ui.key_of(session):
            raise dash.exceptions.PreventUpdate
        subjects = [s.strip() for s in (text or "").split(",") if s.strip()][:MAX_SUBJECTS]
        if not subjects:
            try:
                subjects = default_subjects(session, window)
            except SignalsError as error:
                return ui.error_box(api.explain(error)), ui.meta(error=error), dash.no_update
        period = ui.period_arguments(compare, intervals, as_of)
        calls = [(operation, {subject: s, "window": window, "bucket": bucket, **period}) for s in subjects]

        def render(replies):
            bodies = [r.body for r in replies]
            totals = [{subject: b.get(subject), "total": sum(p[measure] for p in b.get("timeseries", []))}
                      for b in bodies]
            children = [ui.table(totals, [subject, "total"], table_id=f"{prefix}-totals"),
                        ui.disclaimer_footer(bodies[0].get("disclaimer") if bodies else None,
                                             ui.as_of_text(replies[0]) if replies else None)]
            return children, figures.timeseries_figure(bodies, subject=subject, measure=measure)

        return ui.answer(session, calls, render, empty=dash.no_update)
