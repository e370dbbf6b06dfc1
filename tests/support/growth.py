"""The trending growth formula written plainly: the tests' reference for the vectorised version
the service computes (`service/engine/growth.py` must equal it bit for bit)."""

from __future__ import annotations


def growth_pct(recent: float, baseline: float, recent_hours: float, baseline_hours: float) -> float | None:
    """Growth of the hourly rate: 100 * (recent/R - baseline/B) / (baseline/B), 2 decimals.

    None when the baseline rate is zero (growth is undefined, the value is left out).
    """
    if baseline <= 0:
        return None
    base_rate = baseline / baseline_hours
    return round(100.0 * (recent / recent_hours - base_rate) / base_rate, 2)
