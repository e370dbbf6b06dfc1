"""The cap rule as served, or as it was before one of its parts, for benchmarks that weigh a part
(bench_accuracy.py and bench_rankings.py take `--rule`):

- `served`: the rule as served (docs/privacy.md, "How it works", point 2);
- `no-family`: without the family's terms (places over more than a week read only their own pilot);
- `no-ceiling`: without the ceiling nor the family: the rule before issue 33.

The family is switched off where the stage asks which cells have one (`family_dimension`), so the
cells' pilots keep the whole pilot share as they did; nothing of the served code is changed.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import service.privacy.stage as stage
from service.privacy import PrivacyParams

RULES = ("served", "no-family", "no-ceiling")


@contextlib.contextmanager
def cap_rule(rule: str, params: PrivacyParams) -> Iterator[PrivacyParams]:
    """The parameters of `rule`, with the stage's family rule switched off while inside when the
    rule has no family."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}")
    if rule == "served":
        yield params
        return
    served = stage.family_dimension
    stage.family_dimension = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield dataclasses.replace(params, cap_fit=1e12) if rule == "no-ceiling" else params
    finally:
        stage.family_dimension = served
