"""Refreshing reports: every report checked first (its parameters against the API's document, the
key's plan against GET /api/v1/account), then each fetched and written, replaced whole or, for a
history, appended period by period; `sync`'s outcomes go to the run log."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
from collections.abc import Callable, Sequence
from typing import Any

import gspread
import requests
from tqdm import tqdm

from connectors import privacy_budget
from connectors.client import Reply, SignalsClient, SignalsError, rows_text
from connectors.operations import Operation
from connectors.report import Cell, Table, build_table, describe_request
from connectors.sheets import history
from connectors.sheets.errors import ReportFailed, UsageError
from connectors.sheets.spec import ReportSpec
from connectors.sheets.writer import SheetWriter, stored_report

Checked = tuple[ReportSpec, Operation, dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class Outcome:
    spec: ReportSpec
    status: str  # written, unchanged, printed, failed
    message: str
    rows: int = 0  # rows written
    total: int | None = None  # rows the full answer holds, when more than were written (a part)
    budget: str | None = None  # the subscription's privacy budget after the report's answers

    @property
    def part(self) -> str | None:
        """'100 of 390 rows ...' when only part of the answer was written, else None."""
        if self.total is None or self.total <= self.rows:
            return None
        return f"{rows_text(self.rows, self.total)}: the answer holds more; --all (all = true) writes every page"


class Runner:
    """Refreshes reports: checks them all first, then fetches and writes each."""

    def __init__(self, api: SignalsClient, writer: SheetWriter | None, *, out: Callable[[str], None] | None = None,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.api = api
        self.writer = writer  # None: dry run
        self._out = out or print_table
        self._now = now
        self._budget: privacy_budget.PrivacyBudget | None = None  # as the last answer fetched left it

    def check(self, specs: Sequence[ReportSpec]) -> list[Checked]:
        """Every report's operation and request, or UsageError naming every problem; and the key's
        plan must allow each (GET /api/v1/account), else ReportFailed before anything is written."""
        checked, problems = [], []
        for spec in specs:
            where = f"{spec.label}: " if len(specs) > 1 else ""
            try:
                operation, request = self.api.prepare(spec.endpoint, spec.params)
            except SignalsError as exc:
                if exc.sent:
                    raise ReportFailed(api_failure(exc)) from None
                detail = "; ".join(f"{e['name']}: {e['reason']}" for e in exc.errors) if exc.errors else exc.detail
                problems.append(f"{where}{detail}")
                continue
            if not operation.is_data:
                problems.append(f"{spec.label}: the {operation.slug} is not a report")
            elif operation.chooses_format and request.get("format", "json") != "json":
                problems.append(f"{spec.label}: format: a sheet takes the JSON answer; leave format out")
            elif spec.backfill < 1:
                problems.append(f"{where}backfill: {spec.backfill} is not a number of periods (1 or more)")
            elif spec.backfill > 1 and history.request_window(operation, request) is None:
                problems.append(f"{where}backfill: {operation.slug} has no window to step back by")
            else:
                checked.append((spec, operation, request))
        if problems:
            raise UsageError("\n".join(problems))
        try:
            account = self.api.account()
        except SignalsError as exc:
            raise ReportFailed(api_failure(exc)) from None
        allowed = {e["operation"] for e in account["endpoints"]}
        refused = [f"Plan {account['plan_label']} cannot call {op.slug} ({op.method} {op.path}); "
                   f"it needs the {str(op.min_tier).capitalize()} plan or higher."
                   for _, op, _ in checked if op.name not in allowed]
        if refused:
            raise ReportFailed("\n".join(dict.fromkeys(refused)))
        return checked

    def refresh(self, spec: ReportSpec, operation: Operation, request: dict[str, Any]) -> Outcome:
        if spec.history:
            return self._refresh_history(spec, operation, request)
        described = describe_request(operation, request)
        if self.writer is None:
            reply = self._fetch(spec, spec.params, None)
            table = build_table(operation, request, reply.body, reply.as_of, self._now(), reply.total_rows)
            self._out(f"== {described}{_destination(spec)}\n{table.text()}\n")
            return Outcome(spec, "printed", rows_text(table.records, reply.total_rows), table.records,
                           reply.total_rows)
        spreadsheet = self.writer.open(spec.spreadsheet or "")
        sheet, stored = self.writer.state(spreadsheet, spec.worksheet)
        previous = stored_report(stored)
        same = sheet is not None and previous.get("request") == described and previous.get("mode") != "history"
        # Every page: the first page's ETag does not say that the later ones are unchanged.
        etag = previous.get("etag") if same and not spec.all_pages else None
        reply = self._fetch(spec, spec.params, etag)
        if reply.not_modified and etag is not None:  # the sheet holds this very answer
            return Outcome(spec, "unchanged", f"same ETag as the answer of as_of {previous.get('as_of')}; not rewritten")
        table = build_table(operation, request, reply.body, reply.as_of, self._now(), reply.total_rows)
        as_of = history.as_of_text(reply.as_of) if reply.as_of else None
        self.writer.write(spreadsheet, spec.worksheet, sheet, stored, table.rows,
                          {"etag": reply.etag, "as_of": as_of, "request": described})
        return Outcome(spec, "written", f"{rows_text(table.records, reply.total_rows)}, as_of {as_of}", table.records,
                       reply.total_rows)

    def _refresh_history(self, spec: ReportSpec, operation: Operation, request: dict[str, Any]) -> Outcome:
        """Append the periods the sheet does not hold yet: the current one (skipped on a 304 for the
        stored ETag, or when its as_of is already there) and, with a backfill, the ones before,
        one window apart. Every answer is fetched before anything is written, in one batchUpdate."""
        described = describe_request(operation, request)
        sheet = stored = spreadsheet = None
        previous: dict[str, Any] = {}
        if self.writer is not None:
            spreadsheet = self.writer.open(spec.spreadsheet or "")
            sheet, stored = self.writer.state(spreadsheet, spec.worksheet)
            previous = stored_report(stored)
            if sheet is not None and previous.get("mode") == "history" and previous.get("request") != described:
                raise ReportFailed(f"worksheet {spec.worksheet!r} holds the history of another request "
                                   f"({previous.get('request')}); write this one to another worksheet.")
        continuing = sheet is not None and previous.get("mode") == "history"
        present = set(previous.get("periods", [])) if continuing else set()
        etag = previous.get("etag") if continuing and not spec.all_pages else None
        reply = self._fetch(spec, spec.params, etag)
        if reply.as_of is None:
            raise ReportFailed("Signals API: the answer has no as_of (X-Signals-As-Of); cannot place it in a history.")
        window = history.request_window(operation, request)
        wanted = history.periods(reply.as_of, window, spec.backfill) if window else [reply.as_of]
        answers: dict[dt.datetime, Any] = {}
        parts: list[tuple[int, int | None]] = []  # (rows, total) of each period fetched
        if not reply.not_modified and history.as_of_text(reply.as_of) not in present:
            answers[reply.as_of] = reply.body
            parts.append((reply.rows(operation), reply.total_rows))
        for moment in wanted[1:]:
            if history.as_of_text(moment) not in present:
                earlier = self._fetch(spec, history.with_as_of(spec.params, moment), None)
                answers[moment] = earlier.body
                parts.append((earlier.rows(operation), earlier.total_rows))
        if not answers:
            return Outcome(spec, "unchanged", f"the sheet holds as_of {history.as_of_text(reply.as_of)}"
                           + (f" and the {len(wanted) - 1} periods before" if len(wanted) > 1 else "")
                           + "; nothing appended")
        ordered = sorted(answers)  # oldest first: the sheet reads down in time
        columns = previous.get("columns") if continuing else None
        columns = columns or history.history_columns(operation, [answers[m] for m in ordered])
        rows = [row for moment in ordered for row in history.history_rows(operation, moment, answers[moment], columns)]
        stamps = ", ".join(history.as_of_text(m) for m in ordered)
        if self.writer is None:
            self._out(f"== {described}{_destination(spec)} (history: {len(ordered)} period(s))")
            for moment in ordered:
                period = history.history_rows(operation, moment, answers[moment], columns)
                header = history.history_header(operation, columns, "")
                self._out(f"-- as_of {history.as_of_text(moment)}: {len(period)} rows\n"
                          f"{Table((header, *period), len(period)).text().rstrip()}\n")
            return Outcome(spec, "printed", f"{len(rows)} rows for as_of {stamps}{_cut(parts)}")
        periods = history.remembered([*present, *(history.as_of_text(m) for m in ordered)])
        report = {"mode": "history", "request": described, "etag": reply.etag, "columns": columns,
                  "as_of": periods[-1], "periods": periods}
        if continuing:
            self.writer.append(spreadsheet, spec.worksheet, sheet, stored, rows, report)
        else:
            header = history.history_header(operation, columns, _history_note(described, answers[ordered[-1]]))
            self.writer.write(spreadsheet, spec.worksheet, sheet, stored, [header, *rows], report)
        cut = [(shown, total) for shown, total in parts if total is not None and total > shown]
        return Outcome(spec, "written", f"{len(rows)} rows appended for as_of {stamps}{_cut(parts)}", len(rows),
                       len(rows) + sum(total - shown for shown, total in cut) if cut else None)

    def _fetch(self, spec: ReportSpec, params: Any, etag: str | None) -> Reply:
        try:
            reply = self.api.fetch_all(spec.endpoint, params) if spec.all_pages else \
                self.api.fetch(spec.endpoint, params, etag=etag)
        except SignalsError as exc:
            raise ReportFailed(api_failure(exc)) from None
        self._budget = reply.privacy_budget or self._budget
        return reply

    def run(self, specs: Sequence[ReportSpec], checked: Sequence[Checked], progress: bool = False,
            run_log: str | None = None) -> list[Outcome]:
        """Refresh every checked report; with `run_log`, add the outcomes to that worksheet of each
        spreadsheet written to (a failure there is reported, the outcomes stand)."""
        outcomes = []
        bar = tqdm(checked, desc="reports", unit="report", disable=not progress, file=sys.stderr)
        for spec, operation, request in bar:
            bar.set_postfix_str(spec.worksheet[:30])
            self._budget = None
            try:
                outcome = self.refresh(spec, operation, request)
            except ReportFailed as exc:
                outcome = Outcome(spec, "failed", str(exc))
            except (requests.RequestException, gspread.exceptions.GSpreadException) as exc:
                outcome = Outcome(spec, "failed", f"Google Sheets: {type(exc).__name__}: {exc}; the worksheet keeps "
                                                  "its previous content.")
            if self._budget is not None:
                outcome = dataclasses.replace(outcome, budget=self._budget.text())
            line = f"{spec.label}: {outcome.status}: {outcome.message}"
            if progress:
                tqdm.write(line, file=sys.stderr)
            elif outcome.status != "printed":
                print(line, file=sys.stderr)
            outcomes.append(outcome)
        if run_log and self.writer is not None:
            self._log(outcomes, run_log)
        return outcomes

    def _log(self, outcomes: Sequence[Outcome], worksheet: str) -> None:
        when = Cell(self._now(), "datetime")
        by_spreadsheet: dict[str, list[tuple[Cell, ...]]] = {}
        for outcome in outcomes:  # a round in the config's order, above the rounds before
            by_spreadsheet.setdefault(outcome.spec.spreadsheet or "", []).append(run_log_row(when, outcome))
        for spreadsheet_id, runs in by_spreadsheet.items():
            try:
                self.writer.log(self.writer.open(spreadsheet_id), worksheet, runs)
            except (ReportFailed, requests.RequestException, gspread.exceptions.GSpreadException) as exc:
                print(f"run log ({worksheet}) of {spreadsheet_id}: not written: {exc}", file=sys.stderr)


def print_table(text: str) -> None:
    """A table (what --dry-run prints) on stdout, never inside sync's progress bar on stderr: tqdm
    takes the bar off the terminal, prints the table, and draws the bar again below it."""
    tqdm.write(text, file=sys.stdout)
    sys.stdout.flush()


def run_log_row(when: Cell, outcome: Outcome) -> tuple[Cell, ...]:
    """time, report, rows written (a number, or "unchanged"), error, note ("100 of 390 rows ..."
    when only part of the answer was written), and the subscription's privacy budget after the
    report (connectors/privacy_budget.py; empty when the API sends none)."""
    if outcome.status == "written":
        written = Cell(outcome.rows, "number")
    elif outcome.status == "unchanged":
        written = Cell("unchanged")
    else:
        written = Cell(0, "number")
    error = Cell(outcome.message) if outcome.status == "failed" else Cell(None)
    return (when, Cell(outcome.spec.label), written, error, Cell(outcome.part), Cell(outcome.budget))


def _cut(parts: Sequence[tuple[int, int | None]]) -> str:
    """' (each period: 10 of 25 rows)' when a period's answer holds more rows than were written."""
    cut = [rows_text(shown, total) for shown, total in parts if total is not None and total > shown]
    return f" (only part of the answer: {'; '.join(cut)}; --all writes every page)" if cut else ""


def _destination(spec: ReportSpec) -> str:
    return f" -> {spec.spreadsheet} / {spec.worksheet}" if spec.spreadsheet else ""


def _history_note(described: str, body: Any) -> str:
    disclaimer = body.get("disclaimer", "") if isinstance(body, dict) else ""
    return (f"Signals API {described}\nOne row per record and period; as_of is the end of the period (UTC). "
            f"Every number is an estimate with noise added for privacy.\n{disclaimer}").strip()


def api_failure(exc: SignalsError) -> str:
    if exc.status == 429:
        return f"Signals API: rate limited ({exc.detail})"
    if exc.status is None:
        return f"Signals API: {exc.detail}"
    errors = "".join(f"\n  {e['name']}: {e['reason']}" for e in exc.errors)
    return f"Signals API refused the request ({exc.status} {exc.title}): {exc.detail}{errors}"
