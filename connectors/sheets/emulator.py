"""A small Google Sheets API v4 server: only the calls the connector makes through gspread, over
real HTTP on 127.0.0.1. Try the connector without a Google account (docs/sheets.md, "Trying it without a Google account"):

    .venv/bin/python -m connectors.sheets.emulator            # spreadsheet "demo", on port 8090
    export SIGNALS_SHEETS_API_URL=http://127.0.0.1:8090        # in another terminal, then push/sync
    .venv/bin/python -m connectors.sheets push --spreadsheet demo --worksheet Top top-keywords window=7d

Every write is printed as the worksheet's table (a cell's note as `[note: ...]`), and
http://127.0.0.1:8090/ shows every worksheet as text. Nothing is kept after it stops. The
connector's tests use the same server (`SheetsEmulator`), with the failures they set up.

- GET  /v4/spreadsheets/{id}              spreadsheet metadata (properties, sheets, developer metadata)
- POST /v4/spreadsheets/{id}:batchUpdate  addSheet, updateSheetProperties, updateCells, insertDimension
                                          (rows), createDeveloperMetadata, updateDeveloperMetadata

Like Google's, a batchUpdate is applied entirely or not at all (it runs on a copy that replaces
the spreadsheet only when every request succeeded), cells outside the grid are refused, and errors
come as `{"error": {"code", "message", "status"}}`. Unknown ids are 404, ids in `forbidden` 403.
A test can make the next batchUpdates fail (`fail_batches`) or fail in the middle of one
(`fail_at_request`: that request raises after the earlier ones were applied to the copy).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime as dt
import http.server
import json
import re
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit


class SheetsError(Exception):
    def __init__(self, code: int, message: str, status: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


@dataclasses.dataclass
class Sheet:
    sheet_id: int
    title: str
    index: int
    rows: int = 1000
    cols: int = 26
    frozen_rows: int = 0
    cells: dict[tuple[int, int], dict[str, Any]] = dataclasses.field(default_factory=dict)  # (row, col) -> CellData
    metadata: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def properties(self) -> dict[str, Any]:
        grid = {"rowCount": self.rows, "columnCount": self.cols}
        if self.frozen_rows:
            grid["frozenRowCount"] = self.frozen_rows
        return {"sheetId": self.sheet_id, "title": self.title, "index": self.index, "sheetType": "GRID",
                "gridProperties": grid}


@dataclasses.dataclass
class Spreadsheet:
    spreadsheet_id: str
    title: str
    sheets: list[Sheet]
    next_metadata_id: int = 1

    def sheet(self, sheet_id: int) -> Sheet:
        for sheet in self.sheets:
            if sheet.sheet_id == sheet_id:
                return sheet
        raise SheetsError(400, f"No grid with id: {sheet_id}")


class SheetsEmulator:
    """The server, started on creation (port 0: a free one); `on_write(spreadsheet_id, titles)`
    is called after each batchUpdate applied, with the titles of the worksheets it touched."""

    def __init__(self, port: int = 0, on_write: Callable[[str, list[str]], None] | None = None) -> None:
        self.on_write = on_write
        self.spreadsheets: dict[str, Spreadsheet] = {}
        self.forbidden: set[str] = set()
        self.log: list[tuple[str, str]] = []  # (method, path) of every request
        # the next batchUpdates, in order: None lets one through, (code, message) refuses it
        self.fail_batches: list[tuple[int, str] | None] = []
        self.fail_at_request: int | None = None  # index of a request in the next batchUpdate that fails
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- what tests set up and read -----------------------------------------------------

    def create(self, spreadsheet_id: str, title: str = "Reports", sheets: tuple[str, ...] = ("Sheet1",)) -> Spreadsheet:
        spreadsheet = Spreadsheet(spreadsheet_id, title, [Sheet(i, name, i) for i, name in enumerate(sheets)])
        self.spreadsheets[spreadsheet_id] = spreadsheet
        return spreadsheet

    def sheet(self, spreadsheet_id: str, title: str) -> Sheet:
        return next(s for s in self.spreadsheets[spreadsheet_id].sheets if s.title == title)

    def grid(self, spreadsheet_id: str, title: str) -> list[list[dict[str, Any]]]:
        """The worksheet's CellData as rows (every row of the grid, every column)."""
        sheet = self.sheet(spreadsheet_id, title)
        return [[sheet.cells.get((r, c), {}) for c in range(sheet.cols)] for r in range(sheet.rows)]

    def values(self, spreadsheet_id: str, title: str) -> list[list[Any]]:
        """The worksheet's values (numbers as numbers, text as text, '' for empty), trailing empties cut."""
        rows = []
        for row in self.grid(spreadsheet_id, title):
            values = [next(iter(c.get("userEnteredValue", {"": ""}).values())) for c in row]
            while values and values[-1] == "":
                values.pop()
            rows.append(values)
        while rows and not rows[-1]:
            rows.pop()
        return rows

    def text(self, spreadsheet_id: str, title: str) -> str:
        """A worksheet as aligned text: its values, a cell's note as `[note: ...]` after it."""
        sheet = self.sheet(spreadsheet_id, title)
        grid = []
        for row in self.grid(spreadsheet_id, title):
            cells = []
            for cell in row:
                value = next(iter(cell.get("userEnteredValue", {"": ""}).values()))
                shown = _shown(value, cell)
                if cell.get("note") and not cell.get("userEnteredFormat", {}).get("textFormat", {}).get("bold"):
                    shown += f" [note: {cell['note'].split(':')[0]}]"
                cells.append(shown)
            while cells and cells[-1] == "":
                cells.pop()
            grid.append(cells)
        while grid and not grid[-1]:
            grid.pop()
        # columns as wide as the table's own rows (down to the first empty one: a footer's long
        # texts do not widen them)
        table = grid[:grid.index([])] if [] in grid else grid
        width = max((len(r) for r in grid), default=0)
        sizes = [min(40, max((len(r[i]) for r in table if i < len(r)), default=0)) for i in range(width)]
        lines = ["  ".join(v[:80].ljust(sizes[i]) for i, v in enumerate(r)).rstrip() for r in grid]
        return f"-- {spreadsheet_id} / {sheet.title} ({sheet.rows} x {sheet.cols})\n" + "\n".join(lines)

    def dump(self) -> str:
        """Every worksheet of every spreadsheet, as text."""
        return "\n\n".join(self.text(s.spreadsheet_id, sheet.title) for s in self.spreadsheets.values()
                           for sheet in s.sheets) + "\n"

    # -- the API ------------------------------------------------------------------------------

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def _serve(self, method: str) -> None:
                path = unquote(urlsplit(self.path).path)
                if method == "GET" and path == "/":  # a person's view: every worksheet as text
                    with fake._lock:
                        data = fake.dump().encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; charset=UTF-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                with fake._lock:
                    fake.log.append((method, path))
                    fake.authorizations.append(self.headers.get("Authorization"))
                    try:
                        status, answer = 200, fake._route(method, path, body)
                    except SheetsError as exc:
                        status, answer = exc.code, {"error": {"code": exc.code, "message": exc.message,
                                                              "status": exc.status}}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _route(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        match = re.fullmatch(r"/v4/spreadsheets/([^/:]+)(:batchUpdate)?", path)
        if not match:
            raise SheetsError(404, f"Not found: {path} (this fake serves only the calls the connector makes)", "NOT_FOUND")
        spreadsheet_id, batch = match[1], match[2]
        if spreadsheet_id in self.forbidden:
            raise SheetsError(403, "The caller does not have permission", "PERMISSION_DENIED")
        if spreadsheet_id not in self.spreadsheets:
            raise SheetsError(404, "Requested entity was not found.", "NOT_FOUND")
        spreadsheet = self.spreadsheets[spreadsheet_id]
        if method == "GET" and not batch:
            return {"spreadsheetId": spreadsheet_id,
                    "properties": {"title": spreadsheet.title, "locale": "en_US", "timeZone": "Etc/GMT"},
                    "sheets": [{"properties": s.properties(), **({"developerMetadata": copy.deepcopy(s.metadata)}
                                                                 if s.metadata else {})}
                               for s in spreadsheet.sheets]}
        if method == "POST" and batch:
            return self._batch_update(spreadsheet, body)
        raise SheetsError(405, f"{method} {path} is not served here", "FAILED_PRECONDITION")

    def _batch_update(self, spreadsheet: Spreadsheet, body: dict[str, Any]) -> dict[str, Any]:
        failure = self.fail_batches.pop(0) if self.fail_batches else None
        if failure is not None:
            code, message = failure
            raise SheetsError(code, message, "UNAVAILABLE" if code >= 500 else "RESOURCE_EXHAUSTED")
        work = copy.deepcopy(spreadsheet)  # all or nothing
        replies = []
        fail_at, self.fail_at_request = self.fail_at_request, None
        for index, request in enumerate(body.get("requests", [])):
            if index == fail_at:
                raise SheetsError(400, f"Invalid requests[{index}]: failed on purpose (test)")
            (kind, args), = request.items()
            handler = getattr(self, f"_{kind}", None)
            if handler is None:
                raise SheetsError(400, f"Invalid requests[{index}]: {kind} is not served by this fake")
            replies.append(handler(work, args) or {})
        self.spreadsheets[spreadsheet.spreadsheet_id] = work
        if self.on_write is not None:
            touched = {a.get("range", a.get("properties", {})).get("sheetId") for r in body.get("requests", [])
                       for a in r.values() if isinstance(a, dict)}
            self.on_write(spreadsheet.spreadsheet_id, [s.title for s in work.sheets if s.sheet_id in touched])
        return {"spreadsheetId": spreadsheet.spreadsheet_id, "replies": replies}

    def _addSheet(self, work: Spreadsheet, args: dict[str, Any]) -> dict[str, Any]:
        props = args["properties"]
        if any(s.title == props["title"] for s in work.sheets):
            raise SheetsError(400, f"A sheet with the name \"{props['title']}\" already exists.")
        sheet_id = props.get("sheetId", max((s.sheet_id for s in work.sheets), default=0) + 1)
        if any(s.sheet_id == sheet_id for s in work.sheets):
            raise SheetsError(400, f"Sheet id {sheet_id} is already in use")
        grid = props.get("gridProperties", {})
        sheet = Sheet(sheet_id, props["title"], len(work.sheets), grid.get("rowCount", 1000),
                      grid.get("columnCount", 26), grid.get("frozenRowCount", 0))
        self._check_frozen(sheet)
        work.sheets.append(sheet)
        return {"addSheet": {"properties": sheet.properties()}}

    def _updateSheetProperties(self, work: Spreadsheet, args: dict[str, Any]) -> None:
        props, fields = args["properties"], args.get("fields")
        if not fields:
            raise SheetsError(400, "updateSheetProperties: fields is required")
        sheet = work.sheet(props["sheetId"])
        grid = props.get("gridProperties", {})
        for field in fields.split(","):
            name = field.strip().removeprefix("gridProperties.")
            attribute = {"rowCount": "rows", "columnCount": "cols", "frozenRowCount": "frozen_rows"}.get(name)
            if attribute is None:
                raise SheetsError(400, f"updateSheetProperties: field {field} is not served by this fake")
            setattr(sheet, attribute, grid.get(name, 0))
        if sheet.rows < 1 or sheet.cols < 1:
            raise SheetsError(400, "A sheet needs at least one row and one column")
        self._check_frozen(sheet)
        sheet.cells = {(r, c): v for (r, c), v in sheet.cells.items() if r < sheet.rows and c < sheet.cols}

    @staticmethod
    def _check_frozen(sheet: Sheet) -> None:
        if sheet.frozen_rows >= sheet.rows:
            raise SheetsError(400, "You can't freeze all visible rows on the sheet.")

    def _updateCells(self, work: Spreadsheet, args: dict[str, Any]) -> None:
        fields = args.get("fields")
        if not fields:
            raise SheetsError(400, "updateCells: fields is required")
        wanted = [f.strip() for f in fields.split(",")]
        grid = args["range"]
        sheet = work.sheet(grid["sheetId"])
        top, bottom = grid.get("startRowIndex", 0), grid.get("endRowIndex", sheet.rows)
        left, right = grid.get("startColumnIndex", 0), grid.get("endColumnIndex", sheet.cols)
        if bottom > sheet.rows or right > sheet.cols:
            raise SheetsError(400, f"Range ({sheet.title}!R{top + 1}C{left + 1}:R{bottom}C{right}) exceeds grid limits. "
                                   f"Max rows: {sheet.rows}, max columns: {sheet.cols}")
        rows = args.get("rows", [])
        if len(rows) > bottom - top or any(len(r.get("values", [])) > right - left for r in rows):
            raise SheetsError(400, "updateCells: more data than the range")
        for r in range(top, bottom):
            values = rows[r - top].get("values", []) if r - top < len(rows) else []
            for c in range(left, right):
                given = values[c - left] if c - left < len(values) else {}
                cell = {k: v for k, v in sheet.cells.get((r, c), {}).items() if k not in wanted}
                cell.update({k: v for k, v in given.items() if k in wanted})
                if cell:
                    sheet.cells[(r, c)] = cell
                else:
                    sheet.cells.pop((r, c), None)

    def _insertDimension(self, work: Spreadsheet, args: dict[str, Any]) -> None:
        grid = args["range"]
        if grid.get("dimension") != "ROWS":
            raise SheetsError(400, "insertDimension: only ROWS is served by this fake")
        sheet = work.sheet(grid["sheetId"])
        start, end = grid["startIndex"], grid["endIndex"]
        if not 0 <= start < end or start > sheet.rows:
            raise SheetsError(400, f"insertDimension: invalid range {start}..{end} (the sheet has {sheet.rows} rows)")
        count = end - start
        sheet.cells = {(r + count if r >= start else r, c): v for (r, c), v in sheet.cells.items()}
        sheet.rows += count

    def _createDeveloperMetadata(self, work: Spreadsheet, args: dict[str, Any]) -> dict[str, Any]:
        meta = dict(args["developerMetadata"])
        sheet = work.sheet(meta["location"]["sheetId"])
        meta["metadataId"] = work.next_metadata_id
        meta["location"] = {"locationType": "SHEET", "sheetId": sheet.sheet_id}
        work.next_metadata_id += 1
        sheet.metadata.append(meta)
        return {"createDeveloperMetadata": {"developerMetadata": meta}}

    def _updateDeveloperMetadata(self, work: Spreadsheet, args: dict[str, Any]) -> dict[str, Any]:
        ids = {f["developerMetadataLookup"]["metadataId"] for f in args["dataFilters"]}
        changed = []
        for sheet in work.sheets:
            for meta in sheet.metadata:
                if meta["metadataId"] in ids:
                    for field in args["fields"].split(","):
                        meta[field.strip()] = args["developerMetadata"][field.strip()]
                    changed.append(meta)
        if not changed:
            raise SheetsError(400, "No developer metadata matches the data filters")
        return {"updateDeveloperMetadata": {"developerMetadata": changed}}


def _shown(value: Any, cell: dict[str, Any]) -> str:
    """A cell's value as text; a date serial number (a DATE_TIME format) as the date it is."""
    if isinstance(value, int | float) and cell.get("userEnteredFormat", {}).get("numberFormat", {}).get("type") == "DATE_TIME":
        moment = dt.datetime(1899, 12, 30) + dt.timedelta(days=value)
        return moment.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m connectors.sheets.emulator",
                                     description="A Google Sheets API emulator on this machine, to try the Sheets "
                                                 "connector without a Google account.")
    parser.add_argument("--port", type=int, default=8090, help="port on 127.0.0.1 (default 8090)")
    parser.add_argument("--spreadsheet", action="append", metavar="ID",
                        help="a spreadsheet to create (repeatable; default: demo)")
    args = parser.parse_args(argv)

    def printed(spreadsheet_id: str, titles: list[str]) -> None:
        for title in titles:
            print(emulator.text(spreadsheet_id, title) + "\n", flush=True)

    try:
        emulator = SheetsEmulator(args.port, on_write=printed)
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}; choose another --port", file=sys.stderr)
        return 1
    names = args.spreadsheet or ["demo"]
    for name in names:
        emulator.create(name)
    print(f"Sheets emulator on {emulator.url} with spreadsheet(s) {', '.join(names)}. In another terminal:\n"
          f"  export SIGNALS_SHEETS_API_URL={emulator.url}\n"
          f"  .venv/bin/python -m connectors.sheets push --spreadsheet {names[0]} --worksheet 'Top keywords' "
          "top-keywords window=7d limit=10\n"
          f"Each write is printed here; {emulator.url}/ shows every worksheet. Ctrl-C stops (nothing is kept).",
          file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        emulator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
