"""The two "one or several subjects over time" pages (/keywords, /domains): a `ChartPage` with the
subjects in a text box (one call each), no table beside the graph, and the subjects' totals in its
place under it. Each page module calls `page` with its endpoint and subject."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dashboard import api, figures, ui
from dashboard.chart_page import ChartPage, Drawn, Measure, Param, Text

MAX_SUBJECTS = 8


def page(prefix: str, operation: str, subject: str, title: str, example: str,
         default_subjects: Callable[[Mapping[str, Any], str], list[str]]) -> ChartPage:
    """`default_subjects(session, window)` gives the subjects shown when the box is empty."""

    def calls(values, period, session):
        subjects = [s.strip() for s in (values[f"{subject}s"] or "").split(",") if s.strip()][:MAX_SUBJECTS]
        if not subjects:
            subjects = default_subjects(session, values["window"])
        return [(operation, {subject: s, "window": values["window"], "bucket": values["bucket"], **period})
                for s in subjects]

    def draw(replies, values) -> Drawn:
        bodies = [r.body for r in replies]
        totals = [{subject: b.get(subject), "total": sum(p[values["measure"]] for p in b.get("timeseries", []))}
                  for b in bodies]
        as_of = replies[0].as_of if replies else None
        return Drawn(figures.timeseries_figure(bodies, subject=subject, measure=values["measure"], as_of=as_of,
                                               interval_words=api.interval_words()),
                     notes=[ui.table(totals, [subject, "total"], table_id=f"{prefix}-totals")])

    subjects = Text(f"{subject}s", f"{subject}s (comma-separated, up to {MAX_SUBJECTS})", argument=False,
                    suffix="subjects", placeholder=example, hint=f"Empty: the most suppressed {subject}s.",
                    aliases=(subject,))
    return ChartPage(prefix=prefix, operation=operation, title=title,
                     controls=(subjects, Param("window"), Param("bucket"), Measure()), table=False,
                     calls=calls, draw=draw)
