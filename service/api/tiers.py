"""The one table of plan tiers: their order and their per-minute request limits."""

from __future__ import annotations

import enum


class Tier(enum.Enum):
    """A subscription plan. Members are ordered: a higher tier can do all a lower one can."""

    OBSERVER = ("observer", 1, 30)
    ANALYST = ("analyst", 2, 120)
    PROFESSIONAL = ("professional", 3, 300)

    def __init__(self, slug: str, rank: int, requests_per_minute: int) -> None:
        self.slug = slug
        self.rank = rank
        self.requests_per_minute = requests_per_minute

    @property
    def label(self) -> str:
        return self.slug.capitalize()

    def allows(self, minimum: Tier) -> bool:
        return self.rank >= minimum.rank

    @classmethod
    def parse(cls, value: str) -> Tier:
        """Tier from its slug, case-insensitive. Raises ValueError naming the choices."""
        wanted = value.strip().lower()
        for tier in cls:
            if tier.slug == wanted:
                return tier
        raise ValueError(f"unknown tier {value!r}; choose one of {', '.join(t.slug for t in cls)}")
