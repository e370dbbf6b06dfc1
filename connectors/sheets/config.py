"""The TOML config of `sync`, and `--every`'s interval."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

from connectors.sheets.errors import UsageError
from connectors.sheets.spec import ReportSpec

DEFAULT_RUN_LOG = "Signals run log"
_CONFIG_KEYS = {"api_url", "spreadsheet", "report", "run_log"}
_REPORT_KEYS = {"endpoint", "params", "spreadsheet", "worksheet", "history", "backfill", "compare", "intervals", "all"}


@dataclasses.dataclass(frozen=True)
class Config:
    reports: list[ReportSpec]
    api_url: str | None
    run_log: str | None  # the run log worksheet's name; None: no run log


def with_options(params: dict[str, Any], compare: bool, intervals: bool) -> dict[str, Any]:
    """The parameters with `--compare` (compare=previous_period) and `--intervals` (intervals=true)."""
    params = dict(params)
    if compare:
        params["compare"] = "previous_period"
    if intervals:
        params["intervals"] = True
    return params


def load_config(path: Path) -> Config:
    """The reports of a TOML config, its api_url and run log. UsageError names every problem."""
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
        flags = {}
        for key in ("history", "compare", "intervals", "all"):
            flags[key] = report.get(key, False)
            if not isinstance(flags[key], bool):
                problems.append(f"{where}: {key} is true or false")
        backfill = report.get("backfill", 1)
        if isinstance(backfill, bool) or not isinstance(backfill, int) or backfill < 1:
            problems.append(f"{where}: backfill is a number of periods, 1 or more (got {backfill!r})")
            backfill = 1
        specs.append(ReportSpec(str(report.get("endpoint", "")), with_options(params, flags["compare"] is True,
                                                                             flags["intervals"] is True),
                                spreadsheet, str(report.get("worksheet", "")),
                                history=flags["history"] is True or backfill > 1, backfill=backfill,
                                all_pages=flags["all"] is True))
    seen: dict[tuple, int] = {}
    for index, spec in enumerate(specs, 1):
        place = (spec.spreadsheet, spec.worksheet)
        if place in seen:
            problems.append(f"report {index}: writes the same worksheet as report {seen[place]} ({spec.worksheet!r})")
        seen.setdefault(place, index)
    run_log = config.get("run_log", DEFAULT_RUN_LOG)
    if run_log is not False and (not isinstance(run_log, str) or not run_log.strip()):
        problems.append("run_log is a worksheet name, or false for no run log")
    elif run_log in seen_names(specs):
        problems.append(f"run_log: {run_log!r} is also a report's worksheet")
    if problems:
        raise UsageError(f"{path}:\n  " + "\n  ".join(problems))
    api_url = config.get("api_url")
    return Config(specs, api_url if isinstance(api_url, str) else None, run_log or None)


def seen_names(specs: list[ReportSpec]) -> set[str]:
    return {spec.worksheet for spec in specs}


def parse_every(text: str) -> float:
    """`90s`, `15m`, `1h`, `1d` -> seconds (at least one minute: Google's write quota is per minute)."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd])\s*", text)
    if not match:
        raise UsageError(f"--every takes a number and a unit (s, m, h, d), e.g. 1h or 30m; got {text!r}.")
    seconds = int(match[1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]
    if seconds < 60:
        raise UsageError("--every must be at least 1m.")
    return seconds
