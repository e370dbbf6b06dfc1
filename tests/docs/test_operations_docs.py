"""docs/operations.md lists every metric the service defines, and only those; its Grafana
dashboard asks only for metrics that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import Counter, Histogram

from service.observability import metrics

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def defined() -> dict[str, object]:
    found = {}
    for value in vars(metrics).values():
        if isinstance(value, Counter | Histogram) or type(value).__name__ == "Gauge":
            name = value._name + ("_total" if isinstance(value, Counter) else "")
            found[name] = value
    return found


def test_every_metric_is_documented_and_every_documented_one_exists():
    table = re.findall(r"^\| `(signals_[a-z_]+)` \|", (DOCS / "operations.md").read_text(), flags=re.MULTILINE)
    assert sorted(table) == sorted(defined())


def test_the_grafana_dashboard_asks_for_existing_metrics():
    dashboard = json.loads((DOCS / "grafana-signals.json").read_text())
    names = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            names.update(re.findall(r"signals_[a-z_]+", target["expr"]))
    known = set(defined())
    known |= {f"{name}_bucket" for name in known}
    assert names and names <= known, names - known
