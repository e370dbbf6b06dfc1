"""Writing worksheets through gspread, each change in one `spreadsheets.batchUpdate`, which Google
applies entirely or not at all: replace a report, append a history's rows, add runs to the run log.
The report's state (its ETag, request and, for a history, the periods it holds) is kept in the
worksheet's developer metadata under METADATA_KEY."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

import gspread

from connectors.report import Cell
from connectors.sheets.errors import ReportFailed
from connectors.sheets.google import account_email, api_error, sheets_retry

METADATA_KEY = "signals-report"  # developer metadata on the worksheet: the report's ETag and request
RUN_LOG_ROWS = 500  # runs the run log keeps (newest first; older ones fall off the bottom)
RUN_LOG_HEADER = ("time (UTC)", "report", "rows written", "error", "note", "privacy budget")
_CELL_FIELDS = "userEnteredValue,userEnteredFormat,note"

Rows = Sequence[Sequence[Cell]]


class SheetWriter:
    """Reads a worksheet's report state and writes its content, through gspread."""

    def __init__(self, client: gspread.Client) -> None:
        self._client = client
        self._opened: dict[str, gspread.Spreadsheet] = {}

    def open(self, spreadsheet_id: str) -> gspread.Spreadsheet:
        if spreadsheet_id not in self._opened:
            try:
                self._opened[spreadsheet_id] = sheets_retry(self._client.open_by_key)(spreadsheet_id)
            except gspread.exceptions.SpreadsheetNotFound:
                raise ReportFailed(f"Spreadsheet {spreadsheet_id} was not found. Check the ID (the part of its "
                                   "address between /d/ and /edit).") from None
            except PermissionError:  # gspread raises it bare for Google's 403
                who = account_email(self._client)
                raise ReportFailed(f"Spreadsheet {spreadsheet_id} is not shared with the service account"
                                   + (f" {who}" if who else "") + ". Share it with that address as an Editor.") from None
            except gspread.exceptions.APIError as exc:
                raise ReportFailed(f"Google Sheets refused to open spreadsheet {spreadsheet_id}: {api_error(exc)}") from None
        return self._opened[spreadsheet_id]

    def state(self, spreadsheet: gspread.Spreadsheet, worksheet: str) -> tuple[dict | None, dict | None]:
        """The worksheet's properties (None if it does not exist yet) and the report stored with it."""
        try:
            metadata = sheets_retry(spreadsheet.fetch_sheet_metadata)()
        except gspread.exceptions.APIError as exc:
            raise ReportFailed(f"Google Sheets refused to read spreadsheet {spreadsheet.id}: {api_error(exc)}") from None
        for sheet in metadata.get("sheets", []):
            if sheet["properties"]["title"] == worksheet:
                stored = next((m for m in sheet.get("developerMetadata", []) if m.get("metadataKey") == METADATA_KEY), None)
                return sheet["properties"], stored
        return None, None

    def write(self, spreadsheet: gspread.Spreadsheet, worksheet: str, sheet: dict | None, stored: dict | None,
              rows: Rows, report: Mapping[str, Any]) -> None:
        """Replace the worksheet's content with the rows (the grid sized to them), in one batchUpdate."""
        width = max(len(row) for row in rows)
        sheet_id, requests_ = _sized(sheet, worksheet, len(rows), width)
        requests_.append(_cells(sheet_id, 0, rows, width))
        requests_.append(_report_metadata(sheet_id, stored, report))
        self._apply(spreadsheet, requests_, "the worksheet keeps its previous content")

    def append(self, spreadsheet: gspread.Spreadsheet, worksheet: str, sheet: dict, stored: dict | None,
               rows: Rows, report: Mapping[str, Any]) -> None:
        """Add the rows below the worksheet's grid (which a history keeps to its rows), in one batchUpdate."""
        grid = sheet.get("gridProperties", {})
        top = grid.get("rowCount", 0)
        width = max(grid.get("columnCount", 0), *(len(row) for row in rows))
        sheet_id, requests_ = _sized(sheet, worksheet, top + len(rows), width)
        requests_.append(_cells(sheet_id, top, rows, width))
        requests_.append(_report_metadata(sheet_id, stored, report))
        self._apply(spreadsheet, requests_, "the worksheet keeps its previous content")

    def log(self, spreadsheet: gspread.Spreadsheet, worksheet: str, runs: Rows) -> None:
        """Put runs at the top of the run log worksheet (created if missing), newest first, keeping
        the newest RUN_LOG_ROWS: the rows inserted push the older ones down, and the grid is cut there."""
        sheet, _ = self.state(spreadsheet, worksheet)
        header = tuple(Cell(name, "header") for name in RUN_LOG_HEADER)
        runs = list(runs)[:RUN_LOG_ROWS]
        if sheet is None:
            sheet_id, requests_ = _sized(None, worksheet, 1 + len(runs), len(header))
        else:
            sheet_id = sheet["sheetId"]
            before = sheet.get("gridProperties", {}).get("rowCount", 1)
            requests_ = [{"insertDimension": {"range": {"sheetId": sheet_id, "dimension": "ROWS", "startIndex": 1,
                                                        "endIndex": 1 + len(runs)}, "inheritFromBefore": False}}]
            requests_ += _sized(sheet, worksheet, min(before + len(runs), 1 + RUN_LOG_ROWS), len(header))[1]
        requests_.append(_cells(sheet_id, 0, [header, *runs], len(header)))
        self._apply(spreadsheet, requests_, "the run log keeps its previous rows")

    @staticmethod
    def _apply(spreadsheet: gspread.Spreadsheet, requests_: list[dict[str, Any]], kept: str) -> None:
        try:
            sheets_retry(spreadsheet.batch_update)({"requests": requests_})
        except gspread.exceptions.APIError as exc:
            raise ReportFailed(f"Google Sheets refused the write: {api_error(exc)}; {kept}.") from None


def _sized(sheet: dict | None, worksheet: str, rows: int, cols: int) -> tuple[int, list[dict[str, Any]]]:
    """The worksheet's id and the request that creates it or sets its grid (header row frozen)."""
    grid = {"rowCount": rows, "columnCount": cols, "frozenRowCount": 1}
    if sheet is None:
        sheet_id = random.randrange(1, 2**31 - 1)
        return sheet_id, [{"addSheet": {"properties": {"sheetId": sheet_id, "title": worksheet, "gridProperties": grid}}}]
    return sheet["sheetId"], [{"updateSheetProperties": {
        "properties": {"sheetId": sheet["sheetId"], "gridProperties": grid},
        "fields": "gridProperties.rowCount,gridProperties.columnCount,gridProperties.frozenRowCount"}}]


def _cells(sheet_id: int, top: int, rows: Rows, width: int) -> dict[str, Any]:
    return {"updateCells": {
        "range": {"sheetId": sheet_id, "startRowIndex": top, "endRowIndex": top + len(rows),
                  "startColumnIndex": 0, "endColumnIndex": width},
        "rows": [{"values": [cell.cell_data() for cell in row]} for row in rows],
        "fields": _CELL_FIELDS,
    }}


def _report_metadata(sheet_id: int, stored: dict | None, report: Mapping[str, Any]) -> dict[str, Any]:
    value = json.dumps(report, sort_keys=True)
    if stored is not None:
        return {"updateDeveloperMetadata": {
            "dataFilters": [{"developerMetadataLookup": {"metadataId": stored["metadataId"]}}],
            "developerMetadata": {"metadataValue": value}, "fields": "metadataValue"}}
    return {"createDeveloperMetadata": {"developerMetadata": {
        "metadataKey": METADATA_KEY, "metadataValue": value, "location": {"sheetId": sheet_id},
        "visibility": "DOCUMENT"}}}


def stored_report(stored: dict | None) -> dict[str, Any]:
    """The report state kept with a worksheet ({} when none or unreadable)."""
    try:
        value = json.loads(stored["metadataValue"]) if stored else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}
