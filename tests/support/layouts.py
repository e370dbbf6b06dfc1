"""Reading a Dash layout without a browser: its element ids, its text as a reader sees it, an
element by id (the dashboard's tests of pages, tables and controls)."""

from __future__ import annotations

from typing import Any


def _children(component: Any) -> list:
    children = getattr(component, "children", None)
    return list(children) if isinstance(children, list | tuple) else [children]


def ids(component: Any) -> list[str]:
    """Every element id in a layout, in document order."""
    found = [component.id] if getattr(component, "id", None) is not None else []
    for child in _children(component):
        if hasattr(child, "to_plotly_json"):
            found += ids(child)
    return found


def texts(component: Any) -> str:
    """The layout's text, as a reader sees it: its words, one space apart."""
    if isinstance(component, str | int | float):
        return str(component)
    if getattr(component, "children", None) is None:
        return ""
    return " ".join(" ".join(texts(c) for c in _children(component)).split())


def find(component: Any, element_id: str) -> Any:
    """The element with this id, or None."""
    if getattr(component, "id", None) == element_id:
        return component
    for child in _children(component):
        if hasattr(child, "to_plotly_json"):
            found = find(child, element_id)
            if found is not None:
                return found
    return None
