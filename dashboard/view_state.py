"""A page's controls in its URL, so a view can be bookmarked, shared and reloaded:
`/geography?level=region&window=7d&compare=previous_period`.

Reading: Dash Pages hands a page's `layout(**query)` the query string; `pick`, `number`, `text`
and `flag` turn a value into the control's value, or its default when the value is not one the
control accepts (a hand-edited URL never breaks a page). Writing: `register` adds a clientside
callback that puts the controls' values back with `history.replaceState` whenever one changes
(no reload, no round trip; a control at its empty value is left out). Only control values go in
the URL: the key lives in the tab's session store and never does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import dash
from dash import Input, Output, dcc

from connectors.operations import Parameter

Query = Mapping[str, str]


def pick(query: Query, name: str, values: Sequence[Any], default: Any) -> Any:
    """The query's value when it is one of `values` (compared as text), else `default`."""
    given = query.get(name)
    return next((v for v in values if str(v) == given), default)


def number(query: Query, name: str, parameter: Parameter) -> Any:
    """A number within the parameter's bounds (an integer for an integer parameter), else its default."""
    given = query.get(name)
    try:
        value = float(given) if given is not None else None
    except ValueError:
        value = None
    if value is None or value != value:  # missing, or NaN
        return parameter.default
    if parameter.type == "integer":
        if not value.is_integer():
            return parameter.default
        value = int(value)
    low, high = parameter.minimum, parameter.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        return parameter.default
    return value


def text(query: Query, name: str, limit: int = 400) -> str:
    """Free text (the subjects of /keywords), cut to `limit` characters."""
    return (query.get(name) or "")[:limit]


def flag(query: Query, name: str, on: str) -> list[str]:
    """A one-option checklist's value: [on] when the query says name=on."""
    return [on] if query.get(name) == on else []


def store(page: str) -> dcc.Store:
    """The (unused) output of the page's URL-writing callback; put it in the page's layout."""
    return dcc.Store(id=f"{page}-url-state")


def register(page: str, controls: Sequence[tuple[str, str]]) -> None:
    """Write the controls, (query name, component id) each, into the URL when one changes."""
    names = json.dumps([name for name, _ in controls])
    dash.clientside_callback(
        f"""function() {{
            const names = {names};
            const query = new URLSearchParams();
            Array.from(arguments).forEach(function (value, i) {{
                if (value === null || value === undefined || value === '') return;
                if (Array.isArray(value)) {{ if (!value.length) return; value = value.join(','); }}
                query.set(names[i], String(value));
            }});
            const search = query.toString() ? '?' + query.toString() : '';
            if (window.location.search !== search) {{
                window.history.replaceState(window.history.state, '', window.location.pathname + search);
            }}
            return search;
        }}""",
        Output(f"{page}-url-state", "data"),
        [Input(component, "value") for _, component in controls],
    )
