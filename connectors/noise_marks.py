"""Where a record's numbers disagree because of privacy noise or suppression, and what to say about
it: the one wording the dashboard (a mark with a tooltip) and the Sheets output (a cell note) show.

A record's counts are noised and suppressed one by one, so a row may read oddly: a count of 0 beside
others that are not (that count alone had too few users to be published, or its noise took it
below 0), a change of −100 % (this
period's count was suppressed, not necessarily a fall to none), no percentage because the previous
period shows 0, or, with intervals, an interval wider than the number itself (few users: the
noise can be as large as the number). `marks(record, counts)` finds them; nothing here computes
or changes a number: it reads the answer as the API gave it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from connectors.columns import column_name
from connectors.numbers import exact


@dataclasses.dataclass(frozen=True)
class Mark:
    """`label`: a word or two shown beside the number; `text`: what it means (tooltip, cell note)."""

    label: str
    text: str


SUPPRESSED = "suppressed?"
FEW_USERS = "few users"
WAS_ZERO = "was 0"
NOW_ZERO = "now 0"


def suppressed_zero(count: str) -> Mark:
    return Mark(SUPPRESSED, f"{_words(count)} shows 0 while this row's other counts do not: privacy suppression "
                            "hides a count that too few users contributed to, or the privacy noise of a small "
                            "count took it below 0 (shown as 0), so the true value may be above 0.")


def few_users(count: str, low: Any, high: Any, level: str = "") -> Mark:
    """`level`: the interval level as the document gives it ("90 %"; Operation.interval_words)."""
    interval = f"{level} interval" if level else "interval"
    return Mark(FEW_USERS, f"Few users: the {interval} of {_words(count).lower()} ({exact(low)}–{exact(high)}) is "
                           "wider than the number itself, so privacy noise may be as large as the number. "
                           "Read it as a rough size, not a ranking.")


def was_zero(count: str) -> Mark:
    return Mark(WAS_ZERO, f"No percentage: {_words(count).lower()} shows 0 in the previous period, because it was "
                          "not published then (too few users: suppressed for privacy) or nothing happened.")


def now_zero(count: str) -> Mark:
    return Mark(NOW_ZERO, f"−100 % because {_words(count).lower()} shows 0 in this period: a count too small to "
                          "publish is suppressed for privacy, so this is not necessarily a fall to none.")


# Said once, beside a table that carries marks (the Sheets footer, the dashboard's caption).
LEGEND = (f"Marks (hover one) are privacy noise or suppression, not errors: '{SUPPRESSED}' a 0 beside non-zero "
          f"counts; '{FEW_USERS}' an interval wider than the number; '{WAS_ZERO}' no percentage, the previous "
          f"period shows 0; '{NOW_ZERO}' −100 % from a count shown as 0 now.")


def marks(record: Mapping[str, Any], counts: Sequence[str], level: str = "") -> dict[str, Mark]:
    """The marks of one record (as the API sends it: `previous`, `change`, `intervals` nested),
    keyed by where they go: a count's name for its value, `change_<count>` for its change.
    `level`: the interval level as people read it ("90 %", Operation.interval_words)."""
    present = [c for c in counts if isinstance(record.get(c), int | float) and not isinstance(record.get(c), bool)]
    nonzero = {c for c in present if record[c] != 0}
    intervals = record.get("intervals") or {}
    change = record.get("change") or {}
    previous = record.get("previous") or {}
    out: dict[str, Mark] = {}
    for count in present:
        value = record[count]
        if value == 0 and nonzero - {count}:
            out[count] = suppressed_zero(count)
        else:
            low_high = intervals.get(count)
            if isinstance(low_high, list | tuple) and len(low_high) == 2 and value > 0 \
                    and low_high[1] - low_high[0] > value:
                out[count] = few_users(count, *low_high, level)
        moved = change.get(count)
        if isinstance(moved, Mapping):
            if moved.get("pct") is None and previous.get(count) == 0 and value != 0:
                out[column_name("change", count)] = was_zero(count)
            elif value == 0 and previous.get(count):
                out[column_name("change", count)] = now_zero(count)
    return out


def _words(count: str) -> str:
    return count.replace("_", " ").capitalize()
