"""Numbers as a person reads them, for every surface that shows the API's answers (the dashboard's
tables, figures and cards): thousands separators, a compact form where space is short (17.4k, the
exact value kept for a tooltip), a change as an arrow and a percentage, and a count's
interval. Pure: text in, text out."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MINUS = "\u2212"  # a real minus sign: "−3.1 %" reads as a negative number, "-3.1 %" as a hyphen
_SUFFIXES = ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k"))


def exact(value: Any) -> str:
    """17057 -> "17,057"; 1234.5 -> "1,234.5"; a negative number with a real minus; None -> ""
    (text, such as a name, is returned as it is). Never Python's True/False: "yes"/"no"."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}".replace("-", MINUS)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        text = f"{value:,.2f}".rstrip("0").rstrip(".")
        return text.replace("-", MINUS)
    return str(value)


def compact(value: Any, *, from_: int = 1000) -> str:
    """A number in at most three significant digits and a suffix: 17412 -> "17.4k", 174120 ->
    "174k", 1234567 -> "1.23M"; below `from_` (1,000) the exact value. Text is returned as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return exact(value)
    size = abs(value)
    if size < from_:
        return exact(value)
    for unit, suffix in _SUFFIXES:
        if size >= unit * 0.9995:
            scaled = value / unit
            digits = 2 if abs(scaled) < 10 else 1 if abs(scaled) < 100 else 0
            text = f"{scaled:.{digits}f}"
            if "." in text:
                text = text.rstrip("0").rstrip(".")
            return text.replace("-", MINUS) + suffix
    return exact(round(value) if isinstance(value, float) and value.is_integer() else value)


def percent(pct: float | None) -> str:
    """A signed percentage: 12.5 -> "+12.5 %", -3.14 -> "−3.1 %", 0 -> "0 %"."""
    if pct is None:
        return ""
    if pct == 0:
        return "0 %"
    return f"{pct:+,.1f} %".replace("-", MINUS)


def change_words(change: Mapping[str, Any] | None, value: Any = None) -> tuple[str, str, str]:
    """A count's change under compare=previous_period as (arrow and percentage, verdict, kind):
    ("▲ 12.5 %", "beyond noise", "beyond-noise"), ("▼ 3.1 %", "within noise", "within-noise");
    a previous value of 0 (no percentage) is "new (previously 0)", or "0 in both" when `value`
    (the count now) is 0 too. Empty strings without a change."""
    if not change:
        return "", "", ""
    pct = change.get("pct")
    if pct is None:
        figure = "0 in both" if value == 0 else "new (previously 0)"
    elif pct > 0:
        figure = f"▲ {pct:,.1f} %"
    elif pct < 0:
        figure = f"▼ {-pct:,.1f} %"
    else:
        figure = "= 0 %"
    if change.get("beyond_noise"):
        return figure, "beyond noise", "beyond-noise"
    return figure, "within noise", "within-noise"


SHORT_FROM = 100_000  # where space is short, numbers from here on are compact (123k); smaller ones exact


def short(value: Any) -> str:
    """A number where space is short: exact below SHORT_FROM (13,057), compact from it (102k)."""
    return compact(value, from_=SHORT_FROM)


def interval(low_high: Any, *, brief: bool = False) -> str:
    """An interval [low, high] as "1,100–1,300" (brief: `short`, "102k–103k"); "" without one."""
    if not isinstance(low_high, list | tuple) or len(low_high) != 2:
        return ""
    shown = short if brief else exact
    return f"{shown(low_high[0])}–{shown(low_high[1])}"
