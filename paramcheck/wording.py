"""The wording table: what a JSON Schema allows and why a value is refused, in the API's words.

Every reason a user reads for a bad parameter is written here once; tests/connectors/test_client.py keeps the
client's and the server's reasons equal on the same mistakes.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

# "Has a character that is not white space", read alike by JSON Schema's `pattern` (ECMA 262) and
# Python's `re`: the class lists exactly what `str.isspace()` counts as white space (ECMA's own
# `\s` differs: it adds U+FEFF and lacks U+001C..U+001F and U+0085). A keyword normalises to ''
# exactly when it has no such character.
NOT_BLANK_PATTERN = r"[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"

# "Has no control character" (C0, DEL, C1), as JSON Schema and Python's `re` both read it.
NO_CONTROL_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"

# Why a value is refused. `{value}` is the value as `shown` writes it, `{number}` a number as
# `number_text` writes it, `{expected}` what `allowed` says.
REASONS = {
    "unknown": "unknown {word}.{hint} Known {word}s: {known}",
    "required": "is required; expected {expected}",
    "required_when": "is required when {field} includes {value}; expected {expected}",
    "repeated": "must be given once; it was repeated",
    "null": "must not be null; leave it out or send {expected}",
    "not_object_body": "must be a JSON object",
    "invalid": "{value} is not valid; expected {expected}",
    "out_of_bounds": "{number} is out of bounds; expected {expected}",
    "not_allowed": "{value} is not allowed{hint}; expected {expected}",
    "not_string": "must be a string; expected {expected}",
    "not_array": "must be an array; expected {expected}",
    "not_object": "must be an object; expected {expected}",
    "empty_array": "must have at least {least} item(s); it is empty",
    "too_few_items": "must have at least {least} items",
    "too_many_items": "has {count} items; at most {most} are allowed",
    "repeats": "must not repeat a value",
    "not_unicode": "is not valid Unicode text",
    "empty": "must not be empty",
    "too_short": "is too short; expected {expected}",
    "too_long": "is {count} characters long; expected {expected}",
    "no_match": "does not match the pattern {pattern}",
}

# Patterns with a reason of their own (others are refused with "does not match the pattern").
PATTERN_REASONS = {
    NOT_BLANK_PATTERN: "must not be blank (white space only)",
    NO_CONTROL_PATTERN: "must not contain control characters",
}


def reason(kind: str, **values: Any) -> str:
    return REASONS[kind].format(**values)


def number_text(value: float) -> str:
    """A number as the messages show it: integral ones without '.0', very long ones cut short."""
    text = str(value) if isinstance(value, int) else (str(int(value)) if value.is_integer() else str(value))
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text.lstrip('-'))} digits)"


def shown(value: Any) -> str:
    """A refused value as the messages show it (repr); a very long number cut short."""
    text = repr(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and len(text) > 24:
        return f"{text[:12]}... ({len(text.lstrip('-'))} digits)"
    return text


def did_you_mean(name: str, known: Sequence[str], word: str = "parameter") -> str:
    """An unknown name, with the closest known one when there is one (`word`: parameter, field, key)."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return reason("unknown", word=word, hint=hint, known=", ".join(known) or "none")


def enum_hint(value: Any, choices: Sequence[Any]) -> str:
    close = difflib.get_close_matches(str(value).lower(), choices, n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""


def summary(errors: Sequence[Any], word: str = "Parameter") -> str:
    """The problem's `detail` for these errors (each with `name` and `reason`). `word` names a
    single one (the webhook bodies say Field); several are "parameters" either way."""
    if len(errors) == 1:
        return f"{word} '{errors[0].name}' {errors[0].reason}."
    return f"{len(errors)} parameters are invalid: " + ", ".join(f"'{e.name}'" for e in errors) + ". See errors."


def allowed(schema: Mapping[str, Any]) -> str:
    """What the schema allows, in the API's words."""
    kind = schema.get("type")
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if kind == "boolean":
        return "true or false"
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        above = schema.get("exclusiveMinimum")
        if above is not None:
            return f"{noun} greater than {number_text(above)}" + (
                f" and at most {number_text(high)}" if high is not None else "")
        if low is not None and high is not None:
            return f"{noun} from {number_text(low)} to {number_text(high)}"
        if low is not None:
            return f"{noun} of at least {number_text(low)}"
        return noun
    if kind == "string":
        if "maxLength" in schema:
            return f"a string of {schema.get('minLength') or 1} to {schema['maxLength']} characters"
        return "a string"
    if kind == "array":
        inner = allowed(schema["items"]) if "items" in schema else "values"
        return f"an array of at most {schema.get('maxItems')} items, each {inner}"
    if kind == "object" and "properties" in schema:
        return "an object with the optional keys " + ", ".join(schema["properties"])
    return str(kind)
