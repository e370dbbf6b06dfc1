"""The skeleton of a page of controls, a chart and a table: /trending, /activity, /geography, and
/keywords and /domains (series.py). A page declares a `ChartPage` (its operation, title, controls,
and how an answer is drawn); everything they share is here:

    title · URL state · controls (built from the served document) · compare / intervals / as of
    · the graph (a spinner while it loads) and the table beside it · status (an error, the page's
    notes, the disclaimer and as_of)

and one callback: a control changes, the API is called with the controls' values and the graph and
table are drawn again, or the status says what went wrong. Every element id is the page's prefix
and a role (`geo-graph`, `geo-table`, `geo-status`, `geo-level`, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from connectors.client import Reply, SignalsError
from connectors.operations import Operation
from dashboard import api, ui, view_state

Values = Mapping[str, Any]  # the controls' values by name
Calls = list[tuple[str, dict[str, Any]]]


@dataclasses.dataclass(frozen=True)
class Control:
    """One control: `name` is its name in the URL and, with `argument`, the API's argument it
    gives. Its element id is `<prefix>-<suffix>`, the suffix being the name with dashes unless given."""

    name: str
    label: str | None = None
    argument: bool = True
    suffix: str | None = None

    def element_id(self, prefix: str) -> str:
        return f"{prefix}-{self.suffix or self.name.replace('_', '-')}"

    def component(self, prefix: str, operation: Operation, query: view_state.Query) -> Any:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Param(Control):
    """The operation's parameter `name` as the document describes it: a radio for a closed set of
    values, else a number within its bounds."""

    def component(self, prefix: str, operation: Operation, query: view_state.Query) -> Any:
        parameter = operation.param(self.name)
        draw = ui.radio if parameter.enum else ui.number
        return draw(self.element_id(prefix), parameter, self.label, query=query)


@dataclasses.dataclass(frozen=True)
class Measure(Control):
    """Which of the records' measures (their integer fields) the figure shows; not an API argument."""

    name: str = "measure"
    argument: bool = False
    default: str = "suppressions"

    def component(self, prefix: str, operation: Operation, query: view_state.Query) -> Any:
        measures = ui.measures(operation)
        return ui.choice(self.element_id(prefix), self.label or self.name, measures,
                         view_state.pick(query, self.name, measures, self.default))


@dataclasses.dataclass(frozen=True)
class Text(Control):
    """Free text (entered on Enter or leaving the field), with a placeholder and a hint. `aliases`:
    other names the URL may give it by (`?keyword=` for /keywords' `keywords`); it is written back
    under its own name."""

    placeholder: str = ""
    hint: str = ""
    aliases: tuple[str, ...] = ()

    def component(self, prefix: str, operation: Operation, query: view_state.Query) -> Any:
        element_id = self.element_id(prefix)
        value = view_state.text(query, self.name) or next(
            (view_state.text(query, alias) for alias in self.aliases if view_state.text(query, alias)), "")
        return html.Div([
            html.Label(self.label or self.name, htmlFor=element_id, className="control-label"),
            dcc.Input(id=element_id, type="text", value=value, placeholder=self.placeholder,
                      debounce=True, className="text-input"),
            html.Span(self.hint, className="hint"),
        ], className="control")


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A page's answer drawn: the figure, the table beside it, and notes shown above the footer."""

    figure: Any
    table: Any = None
    notes: Sequence[Any] = ()


@dataclasses.dataclass(frozen=True)
class ChartPage:
    """What one page declares. `draw(replies, values)` turns the API's replies into a `Drawn`.
    `calls(values, period, session)`, when given, says which calls to make (default: one call of
    `operation` with the `argument` controls and the period's arguments); it may raise
    SignalsError, shown like a failed call."""

    prefix: str
    operation: str
    title: str
    controls: tuple[Control, ...]
    draw: Callable[[list[Reply], Values], Drawn]
    compare: bool = True    # the "compare with previous period" switch
    intervals: bool = True  # the intervals switch
    table: bool = True      # a table beside the graph; without one the graph takes the page's width
    graph_class: str = "half"
    stacked: bool = False   # the table under the graph, the page's width, rather than beside it
    calls: Callable[[Values, dict[str, Any], Mapping[str, Any]], Calls] | None = None

    def element_id(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    def url_controls(self) -> list[tuple[str, str]]:
        """(name in the URL, element id) of every control, the period's last."""
        period = [name for name, shown in (("compare", self.compare), ("intervals", self.intervals)) if shown]
        return [(c.name, c.element_id(self.prefix)) for c in self.controls] + \
            [(name, self.element_id(name.replace("_", "-"))) for name in (*period, "as_of")]

    def layout(self, **query: str) -> html.Div:
        """The page for a URL's query string (Dash Pages' `layout`)."""
        try:
            operation = api.operation(self.operation)
        except SignalsError as error:
            return ui.unavailable_layout(error)
        graph = ui.graph(self.element_id("graph"))
        if self.table:
            graph = html.Div([html.Div(graph, className=self.graph_class),
                              html.Div(id=self.element_id("table"), className="side")],
                             className="row stacked" if self.stacked else "row")
        return html.Div([
            html.H1(self.title),
            view_state.store(self.prefix),
            html.Div([c.component(self.prefix, operation, query) for c in self.controls], className="controls"),
            ui.period_controls(self.prefix, query, compare=self.compare, intervals=self.intervals),
            graph,
            html.Div(id=self.element_id("status")),
        ], className="page")

    def register(self) -> None:
        """The URL state and the page's one callback (at the page module's import)."""
        controls = self.url_controls()
        view_state.register(self.prefix, controls)
        outputs = [Output(self.element_id("status"), "children"), Output("api-meta", "data", allow_duplicate=True),
                   Output(self.element_id("graph"), "figure")]
        if self.table:
            outputs.append(Output(self.element_id("table"), "children"))
        names = [name for name, _id in controls]

        @dash.callback(*outputs, *[Input(element_id, "value") for _name, element_id in controls],
                       State("session", "data"), prevent_initial_call="initial_duplicate")
        def load(*values_and_session):
            *values, session = values_and_session
            return self.load(dict(zip(names, values, strict=True)), session)

    def load(self, values: Values, session: Mapping[str, Any] | None) -> tuple:
        """The callback's outputs for the controls' `values`: (status, meta, figure[, table])."""
        if not ui.key_of(session):
            raise dash.exceptions.PreventUpdate
        period = ui.period_arguments(values.get("compare"), values.get("intervals"), values.get("as_of"))
        chosen = {c.name: values[c.name] for c in self.controls}
        try:
            calls = self.calls(chosen, period, session) if self.calls is not None else \
                [(self.operation, {**{c.name: chosen[c.name] for c in self.controls if c.argument}, **period})]
        except SignalsError as error:
            return self._outputs(ui.failure_box(error), ui.meta(error=error), dash.no_update, None)

        def render(replies: list[Reply]):
            drawn = self.draw(replies, chosen)
            first = replies[0] if replies else None
            footer = ui.disclaimer_footer(first.body.get("disclaimer") if first else None,
                                          ui.as_of_text(first) if first else None)
            return [*self._rows_note(first), *drawn.notes, footer], (drawn.figure, drawn.table)

        children, meta, (figure, table) = ui.answer(session, calls, render, empty=(dash.no_update, None))
        return self._outputs(children, meta, figure, table)

    def _rows_note(self, reply: Reply | None) -> list[Any]:
        """ "50 of 390 rows" above the footer when the answer holds more rows than the page shows
        (a ranking cut at its `limit`: Signals-Total-Rows); nothing when it shows them all."""
        if reply is None or not isinstance(reply.body, dict):
            return []
        operation = api.operation(self.operation)
        shown, total = reply.rows(operation), reply.total_rows
        if total is None or total <= shown:
            return []
        limited = any(c.name == "limit" for c in self.controls)
        return [html.P(ui.rows_said(shown, total, "limit" if limited else None), className="hint",
                       id=self.element_id("rows"))]

    def _outputs(self, status: Any, meta: dict[str, Any], figure: Any, table: Any) -> tuple:
        return (status, meta, figure, table) if self.table else (status, meta, figure)
