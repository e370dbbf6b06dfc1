"""The release described as data: what `GET /api/v1/privacy` returns and docs/privacy.md states in
words. Every number comes from the menu (menu.py) and the accountant (accountant.py)."""

from __future__ import annotations

from typing import Any

from service.release import accountant, domains
from service.release.estimates import show_z
from service.release.levels import LEVELS
from service.release.menu import BUDGET, KEYWORDS_PER_USER_DAY, LEVEL_SHARES, TABLES, mu_squared, sigma
from service.release.repeat import BLOCK_DAYS

SCHEDULE = ("When an hour closes, the lander releases every node that closes with it: the hour, its "
            "quarter of the UTC day (00, 06, 12, 18), the UTC day and the ISO week. Day and week nodes hold "
            "every cell of the table's public domain; hour and quarter nodes the cells whose previous day "
            "released enough user-days (the others are estimated from their day). A released node is never "
            "released again; serving a request draws no noise.")


def privacy_statement() -> dict[str, Any]:
    figures = accountant.statement()
    return {
        "unit": "user-day",
        "unit_description": "one user's events in one UTC day",
        "delta": figures["delta"],
        "epsilon_per_user_day": figures["epsilon_per_user_day"],
        "epsilon_per_user_month": figures["epsilon_per_user_month"],
        "user_month_days": accountant.MONTH_DAYS,
        "accountant": figures["accountant"],
        "mechanisms": figures["mechanisms"],
        "noise": "Gaussian, rounded to whole numbers, drawn once per released node",
        "schedule": SCHEDULE,
        "levels": [{"name": name, "hours": int(level.length.total_seconds() // 3600),
                    "share": LEVEL_SHARES[name]} for name, level in LEVELS.items()],
        "tables": [{
            "name": t.name,
            "dimensions": [t.dimension],
            "measures": [m.name for m in t.measures],
            "source": t.source,
            "domain": {"values": len(domains.domain(t)), "public": True},
            "cells_per_user_day": t.cells_per_user_day,
            "bounds": {m.name: m.clip for m in t.measures},
            "schedule": "hourly: hour, quarter, day and ISO-week nodes as they close",
            "hourly_cells": "all" if t.every_hour else "hot",
            "share": round(sum(mu_squared(t, m) for m in t.measures) / BUDGET.menu, 4),
            "noise_sd": {m.name: {lv: round(sigma(t, m, lv), 2) for lv in LEVELS} for m in t.measures},
            "shown_when_user_days_reach_sd": round(show_z(t), 3),
        } for t in TABLES],
        "repeat_factors": {"blocks_days": list(BLOCK_DAYS), "share_mu_squared": BUDGET.repeat_factors},
        "keywords_per_user_day_in_places": KEYWORDS_PER_USER_DAY,
        "ad_hoc": {"available": False,
                   "detail": "POST /query outside the menu's tables is refused (422) until ad-hoc releases exist"},
    }
