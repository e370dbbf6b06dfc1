"""The subscription's privacy budget as every consumer shows it, read from the
`Signals-Privacy-Budget` header of an answer (docs/privacy.md, "The privacy budget").

The header is an RFC 8941 dictionary:
`remaining=199998.250, limit=200000000.000, spent=1.750, charged=1.750, renews="2026-12-01T00:00:00Z"`
(epsilon; `charged` is what this answer added, 0 for one already received)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

HEADER = "signals-privacy-budget"
REFUSAL_TYPE_SUFFIX = "privacy-budget"  # the 429 problem type's last part, told apart from the rate limit


@dataclasses.dataclass(frozen=True)
class PrivacyBudget:
    remaining: float
    limit: float
    spent: float
    charged: float
    renews: str

    def text(self) -> str:
        """'privacy budget: 1,234.5 of 200,000,000 epsilon spent this month (this answer 12.3), renews 2026-12-01'."""
        return (f"privacy budget: {self.spent:,.1f} of {self.limit:,.0f} epsilon spent this month "
                f"(this answer {self.charged:,.1f}), renews {self.renews[:10]}")

    def as_dict(self) -> dict[str, float | str]:
        return dataclasses.asdict(self)


def read(headers: Mapping[str, str]) -> PrivacyBudget | None:
    """The budget in an answer's headers (any case of the name), or None when absent or unreadable
    (a deployment without a budget sends none)."""
    value = next((v for k, v in headers.items() if k.lower() == HEADER), None)
    if not value:
        return None
    members: dict[str, str] = {}
    for part in value.split(","):
        name, _, text = part.strip().partition("=")
        members[name.strip()] = text.strip().strip('"')
    try:
        return PrivacyBudget(float(members["remaining"]), float(members["limit"]), float(members["spent"]),
                             float(members.get("charged", "0")), members.get("renews", ""))
    except (KeyError, ValueError):
        return None


def is_refusal(problem: Mapping[str, object]) -> bool:
    """Whether a problem is the privacy budget's refusal (429 type ...privacy-budget), which waiting
    a minute does not cure, unlike the per-minute rate limit."""
    return str(problem.get("type", "")).endswith(REFUSAL_TYPE_SUFFIX)
