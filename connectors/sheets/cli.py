"""The command line: `push` one report, `sync` a config's reports (once or `--every`)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from connectors.client import SignalsClient, SignalsError
from connectors.operations import Operation
from connectors.settings import ConnectorSettings
from connectors.sheets.config import load_config, parse_every
from connectors.sheets.errors import ReportFailed, UsageError
from connectors.sheets.google import google_client
from connectors.sheets.runner import Outcome, Runner, api_failure
from connectors.sheets.spec import ReportSpec
from connectors.sheets.writer import SheetWriter


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


def _periods(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"a number of periods, 1 or more (got {text!r})")
    return count


# Named in push's help; the endpoints themselves are the API's (its document), so a new one needs
# no change here (tests/docs/test_operation_consumers.py checks that these are still endpoints).
ENDPOINT_EXAMPLES = ("top-keywords", "query")


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
    push.add_argument("--history", action="store_true",
                      help="append the rows after an as_of column instead of replacing the table; a period "
                           "already in the sheet is skipped")
    push.add_argument("--backfill", type=_periods, default=1, metavar="N",
                      help="with --history (implied): also the N-1 periods before, one window apart, in one write")
    push.add_argument("--compare", action="store_true", help="add the previous period and the change (compare=previous_period)")
    push.add_argument("--intervals", action="store_true", help="add each count's interval (intervals=true)")
    push.add_argument("--all", action="store_true", dest="all_pages",
                      help="every row of the answer: fetch page after page (Link rel=next) instead of only the "
                           "first `limit` rows")
    push.add_argument("endpoint", help=f"the endpoint, by the last part of its path ({', '.join(ENDPOINT_EXAMPLES)}, "
                                       "...); a name the API does not know is answered with its list")
    push.add_argument("params", nargs="*", metavar="name=value", help="the endpoint's parameters")
    sync = commands.add_parser("sync", parents=[common], help="refresh every report of a config file")
    sync.add_argument("config", type=Path, metavar="CONFIG.toml")
    sync.add_argument("--every", metavar="INTERVAL", help="keep refreshing, e.g. 1h or 30m (Ctrl-C stops)")
    return parser


def main(argv: Sequence[str] | None = None, *, settings: ConnectorSettings | None = None,
         sleep: Callable[[float], None] = time.sleep, rounds: int | None = None,
         api: SignalsClient | None = None) -> int:
    """The command line; returns the exit status. `rounds` bounds --every (for tests)."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    # push's name=value parameters may also come after its options (argparse stops at the first option)
    if extra and (args.command != "push" or any(word.startswith("-") or "=" not in word for word in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:
        args.params = [*args.params, *extra]
    settings = settings or ConnectorSettings.from_env()
    run_log = None
    try:
        if args.command == "sync":
            config = load_config(args.config)
            specs, config_url, run_log = config.reports, config.api_url, config.run_log
            every = parse_every(args.every) if args.every else None
        else:
            specs, config_url, every = [], None, None
        if api is None and not settings.api_key:
            raise UsageError("No Signals API key: set SIGNALS_API_KEY (keys are issued with a subscription).")
        api = api or SignalsClient(args.api_url or config_url, settings=settings)
        if args.command == "push":
            operation = api.operations.find(args.endpoint)
            flags = [f"{name}={value}" for name, value, on in (("compare", "previous_period", args.compare),
                                                                ("intervals", "true", args.intervals)) if on]
            params = parse_assignments([*args.params, *flags], operation)
            specs = [ReportSpec(args.endpoint, params, args.spreadsheet, args.worksheet,
                                history=args.history or args.backfill > 1, backfill=args.backfill,
                                all_pages=args.all_pages)]
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
        print(f"error: {api_failure(exc)}", file=sys.stderr)
        return 1
    if every is None:
        outcomes = runner.run(specs, checked, progress=args.command == "sync", run_log=run_log)
        return _status(outcomes)
    done = 0
    try:
        while True:
            started = time.monotonic()
            outcomes = runner.run(specs, checked, progress=True, run_log=run_log)
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
