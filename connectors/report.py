"""One API answer as a spreadsheet table: a header row, the records (numbers as numbers,
timestamps as dates the sheet understands), a blank row, then a footer saying what the numbers are
(the request, as_of, the window and the other echoed parameters, when it was refreshed, the
disclaimer). Pure: no HTTP, no Google; `connectors/sheets/` writes what this builds.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from connectors import noise_marks
from connectors.client import rows_text
from connectors.columns import column_name, flat_record
from connectors.operations import Operation

# Google Sheets (like Excel) counts days from 1899-12-30; the time of day is the fraction.
_SHEETS_EPOCH = dt.datetime(1899, 12, 30, tzinfo=dt.UTC)
DATE_TIME_PATTERN = "yyyy-mm-dd hh:mm"


@dataclasses.dataclass(frozen=True)
class Cell:
    """`kind`: text, number, datetime (value: an aware datetime), header, label (footer names)."""

    value: Any
    kind: str = "text"
    note: str | None = None  # shown when the cell is hovered (a history's header says what its rows are)

    def cell_data(self) -> dict[str, Any]:
        """The Sheets API CellData: values typed (a string is never parsed as a formula or a
        number: a keyword "=1+1" stays text), timestamps as date serial numbers with a format."""
        data = self._value_data()
        if self.note:
            data["note"] = self.note
        return data

    def _value_data(self) -> dict[str, Any]:
        if self.value is None:
            return {}
        if self.kind == "datetime":
            return {"userEnteredValue": {"numberValue": sheets_serial(self.value)},
                    "userEnteredFormat": {"numberFormat": {"type": "DATE_TIME", "pattern": DATE_TIME_PATTERN}}}
        if self.kind == "number":
            return {"userEnteredValue": {"numberValue": self.value}}
        data: dict[str, Any] = {"userEnteredValue": {"stringValue": str(self.value)}}
        if self.kind == "header":
            data["userEnteredFormat"] = {"textFormat": {"bold": True}}
        elif self.kind == "label":
            data["userEnteredFormat"] = {"textFormat": {"italic": True}}
        return data

    def text(self) -> str:
        if self.value is None:
            return ""
        if self.kind == "datetime":
            return self.value.strftime("%Y-%m-%d %H:%M")
        return str(self.value)


@dataclasses.dataclass(frozen=True)
class Table:
    rows: tuple[tuple[Cell, ...], ...]
    records: int  # data rows (without header and footer)

    @property
    def width(self) -> int:
        return max(len(row) for row in self.rows)

    @property
    def height(self) -> int:
        return len(self.rows)

    def text(self) -> str:
        """The table as aligned text (what --dry-run prints); a cell with a note shows its mark
        ("0 [suppressed?]")."""
        width = self.width
        grid = [[c.text() + (f" [{c.note.split(':')[0]}]" if c.note and c.kind not in ("header", "label") else "")
                 for c in row] + [""] * (width - len(row)) for row in self.rows]
        data = grid[: self.records + 1]
        sizes = [max((len(r[i]) for r in data), default=0) for i in range(width)]
        lines = ["  ".join(v.ljust(sizes[i]) for i, v in enumerate(r)).rstrip() for r in data]
        label = max((len(r[0]) for r in grid[self.records + 2:]), default=0)
        lines += [""] + [f"{r[0].ljust(label)}  {r[1]}".rstrip() for r in grid[self.records + 2:]]
        return "\n".join(lines)


def sheets_serial(moment: dt.datetime) -> float:
    return (moment.astimezone(dt.UTC) - _SHEETS_EPOCH) / dt.timedelta(days=1)


def parse_timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def describe_request(operation: Operation, request: Mapping[str, Any]) -> str:
    """`GET /api/v1/signals/top-keywords?window=7d&limit=10`: the request, as a person reads it."""
    if operation.in_body:
        import json

        return f"{operation.method} {operation.path} {json.dumps(request, sort_keys=True, separators=(',', ':'))}"
    query = urlencode(sorted(request.items()))
    return f"{operation.method} {operation.path}" + (f"?{query}" if query else "")


def record_columns(operation: Operation, records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The columns of flattened records (the first record's), or the documented fields when none."""
    props = operation.record_schema.get("properties", {})
    return list(records[0]) if records else list(operation.record_schema.get("required") or props)


def record_cells(operation: Operation, record: Mapping[str, Any], columns: Sequence[str],
                 notes: Mapping[str, str] | None = None) -> tuple[Cell, ...]:
    """One flattened record as typed cells, in the columns' order; `notes` (column -> text) become
    the cells' notes."""
    stamps = set(operation.timestamp_fields)
    notes = notes or {}
    return tuple(dataclasses.replace(_cell(record.get(c), c in stamps), note=notes.get(c)) for c in columns)


def body_records(operation: Operation, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer's records as flat columns (connectors.columns)."""
    return [flat_record(r) for r in raw_records(operation, body)]


def raw_records(operation: Operation, body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(body.get(operation.records_field, []) if operation.records_field else [])


def record_notes(operation: Operation, body: Mapping[str, Any]) -> list[dict[str, str]]:
    """For each record, the notes of its cells that read oddly because of privacy noise or
    suppression (connectors.noise_marks, the dashboard's wording), keyed by flattened column:
    a count's own cell, or `change_<count>_pct` for its change."""
    out = []
    for record in raw_records(operation, body):
        marks = noise_marks.marks(record, operation.count_fields, operation.interval_words)
        out.append({(column_name(key, "pct") if key.startswith(column_name("change", "")) else key):
                    f"{mark.label}: {mark.text}"
                    for key, mark in marks.items()})
    return out


def build_table(operation: Operation, request: Mapping[str, Any], body: Mapping[str, Any],
                as_of: dt.datetime | None, refreshed: dt.datetime, total: int | None = None) -> Table:
    """The table of an answer; `total`, the rows the full answer holds (Signals-Total-Rows): when
    it is more than the records, the footer says "100 of 390 rows" and how to get them all."""
    records = body_records(operation, body)
    columns = record_columns(operation, records)
    notes = record_notes(operation, body)
    rows: list[tuple[Cell, ...]] = [tuple(Cell(operation.heading(c), "header") for c in columns)]
    for record, noted in zip(records, notes, strict=True):
        rows.append(record_cells(operation, record, columns, noted))
    rows.append(())
    footer: list[tuple[str, Cell]] = [("Source", Cell("Signals API " + describe_request(operation, request)))]
    footer.append(("as_of (UTC)", Cell(as_of, "datetime") if as_of else Cell("unknown")))
    if total is not None and total > len(records):
        footer.append(("Rows", Cell(f"{rows_text(len(records), total)}: the answer holds more than this page; "
                                    "push with --all (all = true in a config) to write every row")))
    for name, value in body.items():
        if name in (operation.records_field, "disclaimer"):
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        footer.append((name, _cell(value, False)))
    footer.append(("Refreshed (UTC)", Cell(refreshed, "datetime")))
    footer.append(("Note", Cell("All times are UTC. Every number is an estimate with noise added for privacy.")))
    if any(notes):
        footer.append(("Marks", Cell(noise_marks.LEGEND.replace("(hover one)", "(a cell note: hover the cell)"))))
    footer.append(("Disclaimer", Cell(body.get("disclaimer", ""))))
    rows.extend((Cell(label, "label"), cell) for label, cell in footer)
    return Table(tuple(rows), len(records))


def _cell(value: Any, timestamp: bool) -> Cell:
    if value is None:
        return Cell(None)
    if timestamp and isinstance(value, str):
        return Cell(parse_timestamp(value), "datetime")
    if isinstance(value, bool):
        return Cell(str(value).lower())
    if isinstance(value, (int, float)):
        return Cell(value, "number")
    return Cell(value)
