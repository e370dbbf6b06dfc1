"""Google Sheets connector: writes Signals reports into worksheets.

    python -m connectors.sheets push --spreadsheet ID --worksheet NAME ENDPOINT [name=value ...]
                                     [--history] [--backfill N] [--compare] [--intervals]
    python -m connectors.sheets sync CONFIG.toml [--every 1h]
    (either with --dry-run: print what would be written instead of writing it)

A report either replaces its worksheet (a header row, the records, a blank row and a footer saying
what the numbers are; `connectors/report.py` builds it) or, with --history, appends each period's
records after a leading as_of column, skipping periods the sheet holds. Every write is one
`spreadsheets.batchUpdate`, which Google applies entirely or not at all. `sync` adds each run's
outcome to a run log worksheet.

One role per module: `spec` (what a report is), `errors` (the two ways a run stops), `google` (gspread's
client, credentials, retries), `writer` (the batchUpdates), `history` (periods and rows of a
history, pure), `runner` (check, fetch, write, log), `config` (the TOML file), `cli` (the commands).

Exit status: 0 done; 1 a report failed (API refused, Sheets refused); 2 bad input (unknown
endpoint, bad parameter, bad config, missing credentials) before anything was written.
"""

from connectors.sheets.cli import main, parse_assignments
from connectors.sheets.config import Config, load_config, parse_every
from connectors.sheets.errors import ReportFailed, UsageError
from connectors.sheets.runner import Outcome, Runner
from connectors.sheets.spec import ReportSpec
from connectors.sheets.writer import METADATA_KEY, RUN_LOG_ROWS, SheetWriter

__all__ = ["METADATA_KEY", "RUN_LOG_ROWS", "Config", "Outcome", "ReportFailed", "ReportSpec", "Runner", "SheetWriter",
           "UsageError", "load_config", "main", "parse_assignments", "parse_every"]
