"""Google Sheets connector: writes Signals reports into worksheets.

    python -m connectors.sheets push --spreadsheet ID --worksheet NAME ENDPOINT [name=value ...]
    python -m connectors.sheets sync CONFIG.toml [--every 1h]
    (either with --dry-run: print the table instead of writing it)

Each report is a header row, the records, a blank row and a footer (the request, as_of, the window
and the other parameters, when it was refreshed, the disclaimer); `connectors/report.py` builds it.
A refresh replaces the worksheet's content in one `spreadsheets.batchUpdate` (resize, cells, and the
report's ETag kept in the sheet's developer metadata), which Google applies entirely or not at
all: if the API call or the write fails, the sheet keeps its previous data. The stored ETag is sent
as If-None-Match, so a report whose answer has not changed is not rewritten.

Google access: a service account's JSON key (`--credentials FILE` or GOOGLE_APPLICATION_CREDENTIALS)
through google-auth, as gspread documents; the spreadsheet must be shared with the account's
address. SIGNALS_SHEETS_API_URL points gspread at a Sheets-compatible server instead of Google's,
without credentials (as Google's emulators are selected). The Signals key is SIGNALS_API_KEY.

Exit status: 0 done; 1 a report failed (API refused, Sheets refused); 2 bad input (unknown
endpoint, bad parameter, bad config, missing credentials) before anything was written.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import random
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gspread
import requests
import tenacity
from tqdm import tqdm

from connectors.client import SignalsClient, SignalsError
from connectors.operations import Operation
from connectors.report import Table, build_table, describe_request
from connectors.settings import ConnectorSettings

GOOGLE_SHEETS_ORIGIN = gspread.urls.SPREADSHEETS_API_V4_BASE_URL.removesuffix("/v4/spreadsheets")
SPREADSHEETS_SCOPE = "https://www.googleapis.com/auth/spreadsheets"
METADATA_KEY = "signals-report"  # developer metadata on the worksheet: the report's ETag and request
SHEETS_TIMEOUT = (10, 60)  # seconds: connect, read


class UsageError(Exception):
    """Bad input, found before anything was written (exit status 2)."""


class ReportFailed(Exception):
    """One report could not be refreshed; the sheet keeps what it had (exit status 1)."""


@dataclasses.dataclass(frozen=True)
class ReportSpec:
    endpoint: str
    params: Mapping[str, Any]
    spreadsheet: str | None
    worksheet: str

    @property
    def label(self) -> str:
        return f"{self.worksheet} ({self.endpoint})"


# -- Google ------------------------------------------------------------------------------------

class RebasedSession(requests.Session):
    """A requests Session that sends gspread's Google Sheets calls to another server."""

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self._base = base_url.rstrip("/")

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        if isinstance(url, str) and url.startswith(GOOGLE_SHEETS_ORIGIN):
            url = self._base + url[len(GOOGLE_SHEETS_ORIGIN):]
        return super().request(method, url, *args, **kwargs)


def google_client(settings: ConnectorSettings, credentials: str | None) -> gspread.Client:
    if settings.sheets_api_url:
        client = gspread.Client(auth=None, session=RebasedSession(settings.sheets_api_url))
    else:
        path = credentials or settings.google_credentials
        if not path:
            raise UsageError("No Google credentials: pass --credentials FILE or set GOOGLE_APPLICATION_CREDENTIALS to "
                             "a service account's JSON key file, and share the spreadsheet with that account's "
                             "address (client_email in the file).")
        if not Path(path).is_file():
            raise UsageError(f"Google credentials file {path} does not exist.")
        try:
            client = gspread.service_account(filename=path, scopes=[SPREADSHEETS_SCOPE])
        except (ValueError, KeyError) as exc:
            raise UsageError(f"{path} is not a service account key file: {exc}") from None
    client.set_timeout(SHEETS_TIMEOUT)
    return client


def _account_email(client: gspread.Client) -> str | None:
    return getattr(getattr(client.http_client, "auth", None), "service_account_email", None)


def _quota_refusal(exc: BaseException) -> bool:
    return isinstance(exc, gspread.exceptions.APIError) and exc.code == 429


# Google's write quota (per minute) answers 429: wait and try again, a few times. A 429 applied nothing.
_sheets_retry = tenacity.retry(retry=tenacity.retry_if_exception(_quota_refusal), reraise=True,
                               wait=tenacity.wait_exponential_jitter(max=32), stop=tenacity.stop_after_attempt(4))


class SheetWriter:
    """Reads a worksheet's report state and replaces its content, through gspread."""

    def __init__(self, client: gspread.Client) -> None:
        self._client = client
        self._opened: dict[str, gspread.Spreadsheet] = {}

    def open(self, spreadsheet_id: str) -> gspread.Spreadsheet:
        if spreadsheet_id not in self._opened:
            try:
                self._opened[spreadsheet_id] = _sheets_retry(self._client.open_by_key)(spreadsheet_id)
            except gspread.exceptions.SpreadsheetNotFound:
                raise ReportFailed(f"Spreadsheet {spreadsheet_id} was not found. Check the ID (the part of its "
                                   "address between /d/ and /edit).") from None
            except PermissionError:  # gspread raises it bare for Google's 403
                who = _account_email(self._client)
                raise ReportFailed(f"Spreadsheet {spreadsheet_id} is not shared with the service account"
                                   + (f" {who}" if who else "") + ". Share it with that address as an Editor.") from None
            except gspread.exceptions.APIError as exc:
                raise ReportFailed(f"Google Sheets refused to open spreadsheet {spreadsheet_id}: {_api_error(exc)}") from None
        return self._opened[spreadsheet_id]

    def state(self, spreadsheet: gspread.Spreadsheet, worksheet: str) -> tuple[dict | None, dict | None]:
        """The worksheet's properties (None if it does not exist yet) and the report stored with it."""
        try:
            metadata = _sheets_retry(spreadsheet.fetch_sheet_metadata)()
        except gspread.exceptions.APIError as exc:
            raise ReportFailed(f"Google Sheets refused to read spreadsheet {spreadsheet.id}: {_api_error(exc)}") from None
        for sheet in metadata.get("sheets", []):
            if sheet["properties"]["title"] == worksheet:
                stored = next((m for m in sheet.get("developerMetadata", []) if m.get("metadataKey") == METADATA_KEY), None)
                return sheet["properties"], stored
        return None, None

    def write(self, spreadsheet: gspread.Spreadsheet, worksheet: str, sheet: dict | None, stored: dict | None,
              table: Table, report: Mapping[str, Any]) -> None:
        """Replace the worksheet's content with the table, in one batchUpdate (all or nothing)."""
        rows, cols = table.height, table.width
        grid = {"rowCount": rows, "columnCount": cols, "frozenRowCount": 1}
        requests_: list[dict[str, Any]] = []
        if sheet is None:
            sheet_id = random.randrange(1, 2**31 - 1)
            requests_.append({"addSheet": {"properties": {"sheetId": sheet_id, "title": worksheet,
                                                          "gridProperties": grid}}})
        else:
            sheet_id = sheet["sheetId"]
            requests_.append({"updateSheetProperties": {
                "properties": {"sheetId": sheet_id, "gridProperties": grid},
                "fields": "gridProperties.rowCount,gridProperties.columnCount,gridProperties.frozenRowCount"}})
        requests_.append({"updateCells": {
            "range": {"sheetId": sheet_id, "startRowIndex": 0, "endRowIndex": rows,
                      "startColumnIndex": 0, "endColumnIndex": cols},
            "rows": [{"values": [cell.cell_data() for cell in row]} for row in table.rows],
            "fields": "userEnteredValue,userEnteredFormat",
        }})
        value = json.dumps(report, sort_keys=True)
        if stored is not None:
            requests_.append({"updateDeveloperMetadata": {
                "dataFilters": [{"developerMetadataLookup": {"metadataId": stored["metadataId"]}}],
                "developerMetadata": {"metadataValue": value}, "fields": "metadataValue"}})
        else:
            requests_.append({"createDeveloperMetadata": {"developerMetadata": {
                "metadataKey": METADATA_KEY, "metadataValue": value, "location": {"sheetId": sheet_id},
                "visibility": "DOCUMENT"}}})
        try:
            _sheets_retry(spreadsheet.batch_update)({"requests": requests_})
        except gspread.exceptions.APIError as exc:
            raise ReportFailed(f"Google Sheets refused the write: {_api_error(exc)}; the worksheet keeps its "
                               "previous content.") from None


def _api_error(exc: gspread.exceptions.APIError) -> str:
    return f"[{exc.code}] {exc.error.get('message', '')}".strip()


# -- one report ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Outcome:
    spec: ReportSpec
    status: str  # written, unchanged, printed, failed
    message: str


class Runner:
    """Refreshes reports: checks them all first, then fetches and writes each."""

    def __init__(self, api: SignalsClient, writer: SheetWriter | None, *, out: Callable[[str], None] = print,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.api = api
        self.writer = writer  # None: dry run
        self._out = out
        self._now = now

    def check(self, specs: Sequence[ReportSpec]) -> list[tuple[ReportSpec, Operation, dict[str, Any]]]:
        """Every report's operation and request, or UsageError naming every problem; and the key's
        plan must allow each (GET /api/v1/account), else ReportFailed before anything is written."""
        checked, problems = [], []
        for spec in specs:
            try:
                operation, request = self.api.prepare(spec.endpoint, spec.params)
            except SignalsError as exc:
                if exc.sent:
                    raise ReportFailed(_api_failure(exc)) from None
                where = f"{spec.label}: " if len(specs) > 1 else ""
                detail = "; ".join(f"{e['name']}: {e['reason']}" for e in exc.errors) if exc.errors else exc.detail
                problems.append(f"{where}{detail}")
                continue
            if operation.name == "account":
                problems.append(f"{spec.label}: the account is not a report")
            elif operation.in_body and request.get("format", "json") != "json":
                problems.append(f"{spec.label}: format: a sheet takes the JSON answer; leave format out")
            else:
                checked.append((spec, operation, request))
        if problems:
            raise UsageError("\n".join(problems))
        try:
            account = self.api.account()
        except SignalsError as exc:
            raise ReportFailed(_api_failure(exc)) from None
        allowed = {e["operation"] for e in account["endpoints"]}
        refused = [f"Plan {account['plan_label']} cannot call {op.slug} ({op.method} {op.path}); "
                   f"it needs the {str(op.min_tier).capitalize()} plan or higher."
                   for _, op, _ in checked if op.name not in allowed]
        if refused:
            raise ReportFailed("\n".join(dict.fromkeys(refused)))
        return checked

    def refresh(self, spec: ReportSpec, operation: Operation, request: dict[str, Any]) -> Outcome:
        described = describe_request(operation, request)
        if self.writer is None:
            reply = self._fetch(spec, None)
            table = build_table(operation, request, reply.body, reply.as_of, self._now())
            where = f" -> {spec.spreadsheet} / {spec.worksheet}" if spec.spreadsheet else ""
            self._out(f"== {described}{where}\n{table.text()}\n")
            return Outcome(spec, "printed", f"{table.records} rows")
        spreadsheet = self.writer.open(spec.spreadsheet or "")
        sheet, stored = self.writer.state(spreadsheet, spec.worksheet)
        previous = _stored_report(stored)
        etag = previous.get("etag") if previous.get("request") == described and sheet is not None else None
        reply = self._fetch(spec, etag)
        if reply.not_modified and etag is not None:  # the sheet holds this very answer
            return Outcome(spec, "unchanged", f"same ETag as the answer of as_of {previous.get('as_of')}; not rewritten")
        table = build_table(operation, request, reply.body, reply.as_of, self._now())
        as_of = reply.as_of.isoformat().replace("+00:00", "Z") if reply.as_of else None
        self.writer.write(spreadsheet, spec.worksheet, sheet, stored, table,
                          {"etag": reply.etag, "as_of": as_of, "request": described})
        return Outcome(spec, "written", f"{table.records} rows, as_of {as_of}")

    def _fetch(self, spec: ReportSpec, etag: str | None) -> Any:
        try:
            return self.api.fetch(spec.endpoint, spec.params, etag=etag)
        except SignalsError as exc:
            raise ReportFailed(_api_failure(exc)) from None

    def run(self, specs: Sequence[ReportSpec], checked: Sequence[tuple[ReportSpec, Operation, dict]],
            progress: bool = False) -> list[Outcome]:
        outcomes = []
        bar = tqdm(checked, desc="reports", unit="report", disable=not progress, file=sys.stderr)
        for spec, operation, request in bar:
            bar.set_postfix_str(spec.worksheet[:30])
            try:
                outcome = self.refresh(spec, operation, request)
            except ReportFailed as exc:
                outcome = Outcome(spec, "failed", str(exc))
            except (requests.RequestException, gspread.exceptions.GSpreadException) as exc:
                outcome = Outcome(spec, "failed", f"Google Sheets: {type(exc).__name__}: {exc}; the worksheet keeps "
                                                  "its previous content.")
            line = f"{spec.label}: {outcome.status}: {outcome.message}"
            if progress:
                tqdm.write(line, file=sys.stderr)
            elif outcome.status != "printed":
                print(line, file=sys.stderr)
            outcomes.append(outcome)
        return outcomes


def _stored_report(stored: dict | None) -> dict[str, Any]:
    try:
        value = json.loads(stored["metadataValue"]) if stored else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _api_failure(exc: SignalsError) -> str:
    if exc.status == 429:
        return f"Signals API: rate limited ({exc.detail})"
    if exc.status is None:
        return f"Signals API: {exc.detail}"
    errors = "".join(f"\n  {e['name']}: {e['reason']}" for e in exc.errors)
    return f"Signals API refused the request ({exc.status} {exc.title}): {exc.detail}{errors}"


# -- the command line ------------------------------------------------------------------------------

def parse_assignments(pairs: Iterable[str], operation: Operation | None) -> dict[str, Any]:
    """`name=value` arguments. Query parameters stay text (the API reads them as text); body
    fields are read by their documented type (numbers, `a,b` or a JSON array, a JSON object)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"Parameters are written name=value; got {pair!r}.")
        name = name.strip()
        if name in params:
            raise UsageError(f"Parameter {name!r} is given twice.")
        params[name] = _typed(value, operation, name) if operation is not None and operation.in_body else value
    return params


def _typed(value: str, operation: Operation, name: str) -> Any:
    kind = next((p.type for p in operation.params if p.name == name), "string")
    if kind in ("integer", "number"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if kind == "array":
        if value.strip().startswith("["):
            return _json(value, name)
        return [v.strip() for v in value.split(",") if v.strip()]
    if kind == "object":
        return _json(value, name)
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def _json(value: str, name: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as exc:
        raise UsageError(f"Parameter {name!r} must be JSON here ({exc.msg}); e.g. filters='{{\"countries\": [\"US\"]}}'.") from None


_CONFIG_KEYS = {"api_url", "spreadsheet", "report"}
_REPORT_KEYS = {"endpoint", "params", "spreadsheet", "worksheet"}


def load_config(path: Path) -> tuple[list[ReportSpec], str | None]:
    """The reports of a TOML config, and its api_url if any. UsageError names every problem."""
    try:
        config = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"Config file {path} does not exist.") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    problems = [f"unknown setting {k!r} (known: {', '.join(sorted(_CONFIG_KEYS))})" for k in config if k not in _CONFIG_KEYS]
    reports = config.get("report", [])
    if not isinstance(reports, list) or not reports:
        problems.append("no reports: add at least one [[report]] table")
        reports = []
    specs = []
    for index, report in enumerate(reports, 1):
        where = f"report {index}"
        unknown = [k for k in report if k not in _REPORT_KEYS]
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_REPORT_KEYS))})")
        spreadsheet = report.get("spreadsheet", config.get("spreadsheet"))
        for key, value in (("endpoint", report.get("endpoint")), ("worksheet", report.get("worksheet")),
                           ("spreadsheet", spreadsheet)):
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{where}: {key} is missing (a non-empty string)")
        params = report.get("params", {})
        if not isinstance(params, dict):
            problems.append(f"{where}: params must be a table, e.g. params = {{ window = \"7d\" }}")
            params = {}
        specs.append(ReportSpec(str(report.get("endpoint", "")), params, spreadsheet, str(report.get("worksheet", ""))))
    seen: dict[tuple, int] = {}
    for index, spec in enumerate(specs, 1):
        place = (spec.spreadsheet, spec.worksheet)
        if place in seen:
            problems.append(f"report {index}: writes the same worksheet as report {seen[place]} ({spec.worksheet!r})")
        seen.setdefault(place, index)
    if problems:
        raise UsageError(f"{path}:\n  " + "\n  ".join(problems))
    api_url = config.get("api_url")
    return specs, api_url if isinstance(api_url, str) else None


def parse_every(text: str) -> float:
    """`90s`, `15m`, `1h`, `1d` -> seconds (at least one minute: Google's write quota is per minute)."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd])\s*", text)
    if not match:
        raise UsageError(f"--every takes a number and a unit (s, m, h, d), e.g. 1h or 30m; got {text!r}.")
    seconds = int(match[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]
    if seconds < 60:
        raise UsageError("--every must be at least 1m.")
    return seconds


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m connectors.sheets",
                                     description="Write Signals API reports into Google Sheets.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dry-run", action="store_true", help="print the tables instead of writing them")
    common.add_argument("--credentials", metavar="FILE",
                        help="service account JSON key (default: GOOGLE_APPLICATION_CREDENTIALS)")
    common.add_argument("--api-url", help="Signals API address (default: SIGNALS_API_URL or http://127.0.0.1:8000)")
    commands = parser.add_subparsers(dest="command", required=True)
    push = commands.add_parser("push", parents=[common], help="write one report")
    push.add_argument("--spreadsheet", required=True, metavar="ID", help="the spreadsheet's ID (from its address)")
    push.add_argument("--worksheet", required=True, metavar="NAME", help="worksheet to write (created if missing)")
    push.add_argument("endpoint", help="top-keywords, keyword-timeseries, domain-timeseries, geo-heat, trending, "
                                       "keyword-activity or query")
    push.add_argument("params", nargs="*", metavar="name=value", help="the endpoint's parameters")
    sync = commands.add_parser("sync", parents=[common], help="refresh every report of a config file")
    sync.add_argument("config", type=Path, metavar="CONFIG.toml")
    sync.add_argument("--every", metavar="INTERVAL", help="keep refreshing, e.g. 1h or 30m (Ctrl-C stops)")
    return parser


def main(argv: Sequence[str] | None = None, *, settings: ConnectorSettings | None = None,
         sleep: Callable[[float], None] = time.sleep, rounds: int | None = None,
         api: SignalsClient | None = None) -> int:
    """The command line; returns the exit status. `rounds` bounds --every (for tests)."""
    args = _parser().parse_args(argv)
    settings = settings or ConnectorSettings.from_env()
    try:
        if args.command == "sync":
            specs, config_url = load_config(args.config)
            every = parse_every(args.every) if args.every else None
        else:
            specs, config_url, every = [], None, None
        if api is None and not settings.api_key:
            raise UsageError("No Signals API key: set SIGNALS_API_KEY (keys are issued with a subscription).")
        api = api or SignalsClient(args.api_url or config_url, settings=settings)
        if args.command == "push":
            operation = api.operations.find(args.endpoint)
            specs = [ReportSpec(args.endpoint, parse_assignments(args.params, operation), args.spreadsheet,
                                args.worksheet)]
        writer = None if args.dry_run else SheetWriter(google_client(settings, args.credentials))
        runner = Runner(api, writer)
        checked = runner.check(specs)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ReportFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except SignalsError as exc:  # the API's document could not be read
        print(f"error: {_api_failure(exc)}", file=sys.stderr)
        return 1
    if every is None:
        outcomes = runner.run(specs, checked, progress=args.command == "sync")
        return _status(outcomes)
    done = 0
    try:
        while True:
            started = time.monotonic()
            outcomes = runner.run(specs, checked, progress=True)
            failed = sum(o.status == "failed" for o in outcomes)
            print(f"round done at {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%S} UTC: {len(outcomes) - failed} ok, "
                  f"{failed} failed; next in {args.every}", file=sys.stderr)
            done += 1
            if rounds is not None and done >= rounds:
                return _status(outcomes)
            sleep(max(0.0, every - (time.monotonic() - started)))
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 0


def _status(outcomes: Sequence[Outcome]) -> int:
    failed = [o for o in outcomes if o.status == "failed"]
    if failed and len(outcomes) > 1:
        print(f"{len(failed)} of {len(outcomes)} reports failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
