"""A history worksheet, pure: which periods a refresh covers (the current as_of and, for a
backfill, the ones before it, one window apart), and the rows it appends (a leading as_of column,
then the report's columns). No HTTP, no Google."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from connectors.buckets import window_length
from connectors.operations import Operation
from connectors.report import Cell, body_records, record_cells, record_columns, record_notes

AS_OF_HEADER = "as_of (UTC)"
PERIODS_KEPT = 1000  # as_of hours a history remembers (in its developer metadata) to skip periods it holds


def request_window(operation: Operation, request: Mapping[str, Any]) -> str | None:
    """The window a request asks for (its default when left out); None for an endpoint without one."""
    if not any(p.name == "window" for p in operation.params):
        return None
    return str(request.get("window") or operation.param("window").default)


def periods(latest: dt.datetime, window: str, count: int) -> list[dt.datetime]:
    """The as_of of the `count` periods ending at `latest`, newest first, one window apart."""
    step = window_length(window)
    return [latest - k * step for k in range(count)]


def as_of_text(moment: dt.datetime) -> str:
    """The API's spelling of an as_of: `2026-03-10T12:00:00Z`."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_as_of(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


def with_as_of(params: Mapping[str, Any], moment: dt.datetime) -> dict[str, Any]:
    """The parameters with as_of set to `moment`."""
    return {**params, "as_of": as_of_text(moment)}


def history_columns(operation: Operation, answers: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's columns: those of the first answer with records (compare and intervals add
    theirs only to records), else the documented fields."""
    for body in answers:
        records = body_records(operation, body)
        if records:
            return record_columns(operation, records)
    return record_columns(operation, [])


def history_header(operation: Operation, columns: Sequence[str], note: str) -> tuple[Cell, ...]:
    return (Cell(AS_OF_HEADER, "header", note), *(Cell(operation.heading(c), "header") for c in columns))


def history_rows(operation: Operation, as_of: dt.datetime, body: Mapping[str, Any],
                 columns: Sequence[str]) -> list[tuple[Cell, ...]]:
    """One period's records, each after its as_of."""
    stamp = Cell(as_of, "datetime")
    return [(stamp, *record_cells(operation, record, columns, notes))
            for record, notes in zip(body_records(operation, body), record_notes(operation, body), strict=True)]


def remembered(periods_: Sequence[str]) -> list[str]:
    """The newest PERIODS_KEPT of a history's as_of values (what its metadata keeps)."""
    return sorted(set(periods_), key=parse_as_of)[-PERIODS_KEPT:]
