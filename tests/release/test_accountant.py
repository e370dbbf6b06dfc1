"""The bound: composed by dp-accounting, recomputed from the release's own record of its noise."""

from __future__ import annotations

from pathlib import Path

from service.release import accountant
from service.release.menu import BUDGET
from service.release.storage import ReleaseStore


def test_the_bound_meets_the_targets() -> None:
    figures = accountant.statement()
    assert figures["delta"] <= 1e-9
    assert figures["epsilon_per_user_day"] <= 4.0
    assert figures["epsilon_per_user_month"] <= 30.0
    assert figures["epsilon_per_user_day"] < figures["epsilon_per_user_month"]


def test_the_release_recomputes_the_menus_figures(released_dir: Path) -> None:
    recorded = accountant.from_release(ReleaseStore(released_dir))
    planned = accountant.mechanisms(BUDGET)
    assert sorted(accountant.names(recorded)) == sorted(accountant.names(planned))
    by_name = {m.name: m for m in planned}
    for mechanism in recorded:
        assert abs(mechanism.multiplier - by_name[mechanism.name].multiplier) < 1e-9, mechanism.name
    assert accountant.epsilon(recorded) == accountant.epsilon(planned)
    assert accountant.epsilon(recorded, month=True) == accountant.epsilon(planned, month=True)


def test_a_user_month_weighs_each_node_by_its_days_squared() -> None:
    assert accountant.month_factor(1) == 31           # hours, quarters, days: disjoint per user-day
    assert accountant.month_factor(7) == 4 * 49 + 9   # the ISO week: up to seven user-days a node
    assert accountant.month_factor(30) == 30 * 30 + 1
    assert accountant.month_factor(90) == 31 * 31


def test_a_noisier_schedule_is_a_smaller_epsilon() -> None:
    from dataclasses import replace

    quieter = accountant.epsilon(accountant.mechanisms(replace(BUDGET, menu=BUDGET.menu / 4)))
    assert quieter < accountant.epsilon(accountant.mechanisms(BUDGET))
