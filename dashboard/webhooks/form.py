"""The webhook form: the create_webhook body's fields as controls, as the served document
describes them (closed sets as radios, numbers with their bounds, the document's defaults), and
the request body from the controls' values."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from connectors.operations import Operation, Parameter
from dashboard import api, ui

# Form fields in the order shown: (body field, control id).
FORM = [("url", "webhook-url"), ("window", "webhook-window"), ("dimension", "webhook-dimension"),
        ("metric", "webhook-metric"), ("threshold_pct", "webhook-threshold-pct"),
        ("cooldown_minutes", "webhook-cooldown-minutes"), ("min_baseline", "webhook-min-baseline"),
        ("enabled", "webhook-enabled"), ("description", "webhook-description")]


def initial(param: Parameter) -> Any:
    """A form control's value for the document's default of a field."""
    if param.type == "boolean":
        return ["enabled"] if param.default else []
    if param.type == "string" and not param.enum:
        return param.default or ""
    return param.default


def form(create: Operation) -> html.Div:
    """The create body's fields as controls: closed sets as radios, numbers with their bounds."""
    controls = []
    for field, control_id in FORM:
        param = create.param(field)
        if param.enum:
            controls.append(ui.radio(control_id, param, field.replace("_", " ")))
        elif param.type in ("integer", "number"):
            controls.append(ui.number(control_id, param, field.replace("_", " ")))
        elif param.type == "boolean":
            controls.append(html.Div([
                html.Label(field, htmlFor=control_id, className="control-label"),
                dcc.Checklist(id=control_id, options=[{"label": "send alerts", "value": "enabled"}],
                              value=initial(param), className="radio")], className="control"))
        else:
            controls.append(html.Div([
                html.Label(field, htmlFor=control_id, className="control-label"),
                dcc.Input(id=control_id, type="url" if field == "url" else "text", value=initial(param),
                          maxLength=param.schema.get("maxLength"), className="text-input",
                          placeholder="https://example.com/signals-hook" if field == "url" else ""),
                html.Span(param.description or (param.allowed() if param.required else
                                                f"optional, at most {param.schema.get('maxLength')} characters"),
                          className="hint")], className="control"))
    return html.Div(controls, className="controls")


def defaults() -> list[Any]:
    """The form's values for a new webhook: the document's defaults."""
    create = api.operation("create_webhook")
    return [initial(create.param(field)) for field, _id in FORM]


def values_of(hook: dict[str, Any]) -> list[Any]:
    """The form's values for an existing webhook (get_webhook's answer)."""
    return [(["enabled"] if hook[field] else []) if field == "enabled" else hook[field] for field, _id in FORM]


def body(values: list[Any]) -> tuple[dict[str, Any], list[str]]:
    """The request body from the form's values, and the fields left empty (the API needs them)."""
    create = api.operation("create_webhook")
    out: dict[str, Any] = {}
    empty = []
    for (field, _id), value in zip(FORM, values, strict=True):
        param = create.param(field)
        if param.type == "boolean":
            out[field] = "enabled" in (value or [])
        elif isinstance(value, str):
            out[field] = value.strip() if field == "url" else value
        elif value is None:
            if param.required or param.type in ("integer", "number"):
                empty.append(f"{field.replace('_', ' ')} ({param.allowed()})")
        else:
            out[field] = value
    return out, empty
