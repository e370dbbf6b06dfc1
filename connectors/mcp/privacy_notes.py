"""The privacy notes of a tool result: what the numbers are (the answer's disclaimer), the
intervals when the call asked for them, and the subscription's privacy budget after the call, as
structured fields beside the endpoint's JSON body (one member, `privacy`, of the result's
`structuredContent`), with their JSON Schema for the tool's `outputSchema` and the lines that say
the same in words.

Nothing here is per endpoint. The schema is written once for every tool and filled from the served
document: the disclaimer's schema is the body's own, the intervals' level is the document's
`x-signals-interval-level`, the counts that carry an interval are those of the record schema's
`intervals`, and whether a tool has intervals at all is whether its endpoint takes an `intervals`
parameter. The budget's members are `connectors.privacy_budget.PrivacyBudget`'s fields, read from
the answer's `Signals-Privacy-Budget` header.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from connectors import privacy_budget
from connectors.columns import level_text
from connectors.operations import Operation

MEMBER = "privacy"  # the member of structuredContent (and of outputSchema's properties) holding the notes
INTERVALS = "intervals"  # the parameter that asks for intervals, and the records' member that holds them

# What each member of the budget is (PrivacyBudget's fields; tests/connectors/mcp/ check that every
# field has its words here).
BUDGET_MEMBERS = {
    "remaining": "epsilon left this month after this answer",
    "limit": "the month's budget in epsilon",
    "spent": "epsilon spent this month, this answer included",
    "charged": "what this answer cost in epsilon (0 for an answer already received: asking again is free)",
    "renews": "when the budget renews (ISO 8601 UTC, the 1st of next month)",
}
_JSON_TYPES = {float: "number", int: "integer", str: "string", "float": "number", "int": "integer", "str": "string"}


def takes_intervals(operation: Operation) -> bool:
    return any(p.name == INTERVALS for p in operation.params)


def interval_counts(operation: Operation) -> list[str]:
    """The counts of a record that carry an interval: the record schema's `intervals` members."""
    schema = operation.record_schema.get("properties", {}).get(INTERVALS, {})
    return list(schema.get("properties", {})) or list(operation.count_fields)


def schema(raw: Mapping[str, Any], operation: Operation) -> dict[str, Any]:
    """The JSON Schema of the `privacy` member for the tool of `operation` (`raw`: its entry in
    the document)."""
    body = raw["responses"]["200"]["content"]["application/json"]["schema"]
    properties: dict[str, Any] = {}
    required = []
    disclaimer = body.get("properties", {}).get("disclaimer")
    if disclaimer is not None:
        properties["disclaimer"] = {**copy.deepcopy(disclaimer),
                                    "description": "What the numbers are: the answer's own `disclaimer`, repeated "
                                                   "beside the other notes."}
        required.append("disclaimer")
    if takes_intervals(operation):
        properties["intervals"] = _intervals_schema(operation)
    properties["budget"] = _budget_schema()
    required.append("budget")
    return {"type": "object",
            "description": "The privacy notes of this answer: what the numbers are, the intervals when asked for, "
                           "and the subscription's privacy budget after this call.",
            "properties": properties, "required": required, "additionalProperties": False}


def _intervals_schema(operation: Operation) -> dict[str, Any]:
    records = operation.records_field or "records"
    return {
        "type": "object",
        "description": f"Present when the call asked {INTERVALS}=true: each of the {records} then has "
                       f"`{INTERVALS}`, for each of these counts a pair [low, high] that holds the exact value "
                       f"(without noise) about {operation.interval_words or 'the level'} of the time.",
        "properties": {
            "level": {"type": ["number", "null"],
                      "description": "How often an interval holds the exact value (0.9: 90 % of the time)."},
            "counts": {"type": "array", "items": {"type": "string", "enum": interval_counts(operation)},
                       "description": f"The counts of each record that carry an interval in `{INTERVALS}`."},
        },
        "required": ["level", "counts"],
        "additionalProperties": False,
    }


def _budget_schema() -> dict[str, Any]:
    fields = dataclasses.fields(privacy_budget.PrivacyBudget)
    return {
        "type": ["object", "null"],
        "description": "The subscription's privacy budget after this call, in epsilon: the answer's "
                       "Signals-Privacy-Budget header read into numbers (null when the deployment has no budget).",
        "properties": {f.name: {"type": _JSON_TYPES[f.type], "description": BUDGET_MEMBERS.get(f.name, "")}
                       for f in fields},
        "required": [f.name for f in fields],
        "additionalProperties": False,
    }


def notes(operation: Operation, body: Mapping[str, Any], arguments: Mapping[str, Any],
          budget: privacy_budget.PrivacyBudget | None) -> dict[str, Any]:
    """The `privacy` member of one answer: its disclaimer, the intervals if the call asked for them
    (`arguments`: the call's, which the API accepted), the budget its headers gave (or None)."""
    value: dict[str, Any] = {}
    if "disclaimer" in body:
        value["disclaimer"] = body["disclaimer"]
    if takes_intervals(operation) and arguments.get(INTERVALS) in (True, "true"):
        value["intervals"] = {"level": operation.interval_level, "counts": interval_counts(operation)}
    value["budget"] = budget.as_dict() if budget is not None else None
    return value


def lines(value: Mapping[str, Any]) -> list[str]:
    """The notes in words, for the result's text: a line on the intervals when asked, and the
    budget line (connectors/privacy_budget.py's words). The disclaimer is in the body's text."""
    out = []
    intervals = value.get("intervals")
    if intervals:
        level = intervals.get("level")
        often = f" about {level_text(level)} of the time" if level is not None else ""
        out.append(f"Intervals: each record's `{INTERVALS}` gives [low, high] for {', '.join(intervals['counts'])}, "
                   f"a range that holds the exact value{often}.")
    budget = value.get("budget")
    if budget:
        text = privacy_budget.PrivacyBudget(**budget).text()
        out.append(text[0].upper() + text[1:] + ".")
    return out
