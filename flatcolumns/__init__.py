"""How a record becomes flat columns: the one rule of the API's CSV (service/answers/render.py), the Sheets
reports (connectors/report.py) and anything else that shows records as a table.

Shared the way `paramcheck/` is: the service and the connectors both import it, and it imports
neither (the service never imports its own consumers; connectors/columns.py re-exports it for them).

A record's own fields are columns as they are; a member m of an object field f becomes the column
`f_m` (compare's `previous`: previous_suppressions; nested again, `change`: change_suppressions_pct,
change_suppressions_beyond_noise), and a pair [low, high] of f (an interval) becomes `f_low` and
`f_high` (intervals_suppressions_low). `flat_columns` names the columns of a record's shape and
says where each one's value is; `flat_record` applies it to a decoded JSON record and
service/answers/render.py to a polars frame. The served OpenAPI document publishes the rule and the
headings (`x-signals-columns`, `document_entry`) for consumers that cannot import this package
(connectors/apps_script/Code.gs), with the interval level (`x-signals-interval-level`) the
headings name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SEPARATOR = "_"
PAIR = ("low", "high")  # the ends of an interval [low, high]

# A record's shape: field -> None (a value), a shape (an object's members) or PAIR (an interval).
Shape = Mapping[str, Any]
Path = tuple[Any, ...]  # field names, then an index into a pair

# The words a table heads a nested column with (`<count>, <words>`): (prefix, suffix, words);
# `{level}` is the interval level as a percentage ("90 %").
HEADINGS = (
    ("previous_", "", "previous period"),
    ("change_", "_pct", "change %"),
    ("change_", "_beyond_noise", "beyond noise"),
    ("intervals_", "_low", "low ({level} interval)"),
    ("intervals_", "_high", "high ({level} interval)"),
)


def column_name(*parts: str) -> str:
    """The flat column of a nested value: column_name("change", "suppressions", "pct")."""
    return SEPARATOR.join(parts)


def flat_columns(shape: Shape, path: Path = ()) -> list[tuple[str, Path]]:
    """The flat columns of a record of this shape, in its order: (name, path to the value)."""
    out: list[tuple[str, Path]] = []
    for name, inner in shape.items():
        if inner == PAIR:
            out += [(column_name(*path, name, end), (*path, name, i)) for i, end in enumerate(PAIR)]
        elif isinstance(inner, Mapping):
            out += flat_columns(inner, (*path, name))
        else:
            out.append((column_name(*path, name), (*path, name)))
    return out


def record_shape(record: Mapping[str, Any]) -> dict[str, Any]:
    """The shape of a decoded JSON record: objects nested, a two-element list a pair."""
    return {name: record_shape(value) if isinstance(value, Mapping)
            else PAIR if isinstance(value, list) and len(value) == 2 else None
            for name, value in record.items()}


def schema_shape(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The shape of the records a JSON Schema (the document's record schema) describes."""
    def one(member: Mapping[str, Any]) -> Any:
        if member.get("type") == "object" and "properties" in member:
            return schema_shape(member)
        if member.get("type") == "array" and member.get("minItems") == member.get("maxItems") == len(PAIR):
            return PAIR
        return None

    return {name: one(member) for name, member in schema.get("properties", {}).items()}


def flat_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded JSON record as flat columns (`flat_columns`)."""
    out: dict[str, Any] = {}
    for name, path in flat_columns(record_shape(record)):
        value: Any = record
        for step in path:
            value = value[step]
        out[name] = value
    return out


def level_text(level: float | None) -> str:
    """An interval level as people read it: 0.9 -> "90 %"; "" when the document gives none."""
    return f"{level * 100:g} %" if level is not None else ""


def headings(level: float) -> list[dict[str, str]]:
    """HEADINGS with the level written in, as the document publishes them."""
    return [{"prefix": prefix, "suffix": suffix, "words": words.format(level=level_text(level))}
            for prefix, suffix, words in HEADINGS]


def heading(column: str, rules: Sequence[Mapping[str, str]]) -> str:
    """A column's heading as a person reads it: the record's own fields as the API names them,
    nested ones in words (`previous_suppressions` -> `suppressions, previous period`)."""
    for rule in rules:
        prefix, suffix = rule["prefix"], rule["suffix"]
        if column.startswith(prefix) and column.endswith(suffix) and len(column) > len(prefix) + len(suffix):
            return f"{column[len(prefix):len(column) - len(suffix)]}, {rule['words']}"
    return column


def document_entry(level: float) -> dict[str, Any]:
    """The rule as the served document publishes it (`x-signals-columns`)."""
    return {
        "description": "How a record becomes flat columns (the CSV of /query, spreadsheets): a member m of an "
                       "object field f becomes the column f" + SEPARATOR + "m (previous_suppressions; nested "
                       "again: change_suppressions_pct), a pair [low, high] of f becomes f" + SEPARATOR + PAIR[0]
                       + " and f" + SEPARATOR + PAIR[1] + " (intervals_suppressions_low). `headings`: the words a "
                       "table heads a column of that prefix and suffix with, after the count's name "
                       "(\"suppressions, previous period\"). Each data operation's `x-signals-columns` lists its "
                       "records' flat columns in order.",
        "separator": SEPARATOR,
        "pair": list(PAIR),
        "headings": headings(level),
    }
