"""The Google Sheets connector with the real gspread over real HTTP, against a small
Sheets-compatible server (connectors/sheets/emulator.py) and the real API served from a thread."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys

import pytest

from connectors.client import SignalsClient
from connectors.report import Cell, sheets_serial
from connectors.settings import ConnectorSettings
from connectors.sheets import METADATA_KEY, main, parse_every
from tests.support.api_server import FlakyFront, Ticker, make_app, serve
from tests.support.fixture_data import FIXTURE_NOW
from tests.support.processes import ROOT
from tests.support.sheets_reports import SHEET, batch_updates, write_config

AS_OF_SERIAL = sheets_serial(dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC))


def stored_report(fake, worksheet):
    meta = [m for m in fake.sheet(SHEET, worksheet).metadata if m["metadataKey"] == METADATA_KEY]
    assert len(meta) == 1
    return json.loads(meta[0]["metadataValue"])


# -- what lands in the sheet ----------------------------------------------------------------

def test_push_writes_header_typed_rows_and_footer_in_one_batch(run, fake):
    status, out, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Top", "top-keywords", "window=24h", "limit=3")
    assert status == 0, err
    assert "Top (top-keywords): written: 3 of 9 rows" in err  # the answer holds 9: it says so
    assert len(batch_updates(fake)) == 1  # the new worksheet, its cells and its ETag in one request
    values = fake.values(SHEET, "Top")
    assert values[0] == ["keyword_raw", "suppressions", "users_est", "rank"]
    assert [(k, s, r) for k, s, _, r in values[1:4]] == [("elon musk", 80, 1), ("snakes", 72, 2), ("weather", 47, 3)]
    assert all(isinstance(users, int) for _, _, users, _ in values[1:4])
    grid = fake.grid(SHEET, "Top")
    assert grid[0][0]["userEnteredFormat"]["textFormat"]["bold"] is True
    assert grid[1][1]["userEnteredValue"] == {"numberValue": 80}  # a number, not the text "80"
    assert values[4] == []  # a blank row before the footer
    footer = {row[0]: row[1] for row in values[5:]}
    assert footer["Source"] == "Signals API GET /api/v1/signals/top-keywords?limit=3&window=24h"
    assert footer["as_of (UTC)"] == pytest.approx(AS_OF_SERIAL)
    assert grid[6][1]["userEnteredFormat"]["numberFormat"] == {"type": "DATE_TIME", "pattern": "yyyy-mm-dd hh:mm"}
    assert footer["window"] == "24h"
    assert footer["Rows"].startswith("3 of 9 rows: the answer holds more") and "--all" in footer["Rows"]
    assert footer["Disclaimer"].startswith("Aggregated, anonymous statistics")
    sheet = fake.sheet(SHEET, "Top")
    assert (sheet.rows, sheet.cols, sheet.frozen_rows) == (len(values), 4, 1)  # nothing else on the sheet
    report = stored_report(fake, "Top")
    assert report["etag"].startswith('"') and report["as_of"] == "2026-03-10T12:00:00Z"
    assert all(auth is None for auth in fake.authorizations)  # SIGNALS_SHEETS_API_URL: no credentials


def test_push_all_writes_every_page(run, fake):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "All", "--all", "top-keywords", "window=24h",
                         "limit=2")
    assert status == 0, err
    assert "All (top-keywords): written: 9 rows" in err
    values = fake.values(SHEET, "All")
    rows = values[1:values.index([])]
    assert [r[3] for r in rows] == list(range(1, 10))  # every rank, pages of 2 joined in order
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Whole", "top-keywords", "window=24h",
                         "limit=500")
    assert fake.values(SHEET, "Whole")[1:10] == rows
    footer = {row[0]: row[1] for row in values[values.index([]) + 1:]}
    assert "Rows" not in footer  # nothing left out, nothing to say


def test_push_all_of_a_query_and_the_dry_run_say_the_part(run, fake, capsys):
    query = ["query", "window=7d", "group_by=keyword,platform", "limit=3"]
    status, out, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Q", "--dry-run", *query)
    assert status == 0, err
    total = int(re.search(r"Rows +3 of (\d+) rows", out)[1])
    assert total > 3
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Q", "--all", *query)
    assert status == 0 and f"Q (query): written: {total} rows" in err


def test_sync_all_in_the_config(run, fake, tmp_path):
    config = write_config(tmp_path, [("Top", "top-keywords", {"window": "24h", "limit": 4})])
    config.write_text(config.read_text().replace('worksheet = "Top"', 'worksheet = "Top"\nall = true'))
    status, _, err = run("sync", str(config))
    assert status == 0 and "Top (top-keywords): written: 9 rows" in err
    log = fake.values(SHEET, "Signals run log")
    assert log[1][1:3] == ["Top (top-keywords)", 9] and log[1][3:5] == ["", ""]  # no error, no note
    assert re.fullmatch(r"privacy budget: [\d,.]+ of [\d,]+ epsilon spent this month \(this answer [\d,.]+\), "
                        r"renews \d{4}-\d\d-01", log[1][5])
    config.write_text(config.read_text().replace("all = true", 'all = "yes"'))
    status, _, err = run("sync", str(config))
    assert status == 2 and "all is true or false" in err


def test_timestamps_are_dates_the_sheet_understands(run, fake):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Snakes", "keyword-timeseries",
                         "keyword=snakes", "window=24h", "bucket=hour")
    assert status == 0, err
    grid = fake.grid(SHEET, "Snakes")
    assert [c["userEnteredValue"]["stringValue"] for c in grid[0]] == ["ts", "suppressions", "users_est", "events"]
    first = grid[1][0]
    assert first["userEnteredValue"]["numberValue"] == pytest.approx(sheets_serial(dt.datetime(2026, 3, 9, 12, tzinfo=dt.UTC)))
    assert first["userEnteredFormat"]["numberFormat"]["type"] == "DATE_TIME"
    assert fake.values(SHEET, "Snakes")[24][0] == pytest.approx(AS_OF_SERIAL - 1 / 24)  # 24 hourly buckets
    footer = {row[0]: row[1] for row in fake.values(SHEET, "Snakes")[26:]}
    assert (footer["keyword"], footer["window"], footer["bucket"]) == ("snakes", "24h", "hour")


def test_text_is_never_a_formula_or_a_number():
    assert Cell("=HYPERLINK(\"x\")").cell_data() == {"userEnteredValue": {"stringValue": "=HYPERLINK(\"x\")"}}
    assert Cell("007").cell_data() == {"userEnteredValue": {"stringValue": "007"}}


def test_query_parameters_typed_from_the_command_line(run, fake):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Query", "query", "window=7d",
                         "group_by=country,time", "bucket=day", 'filters={"countries": ["US"]}', "limit=3")
    assert status == 0, err
    values = fake.values(SHEET, "Query")
    assert values[0] == ["country_id", "country_name", "ts", "suppressions", "unique_users", "events"]
    assert values[1][:2] == ["US", "United States"] and isinstance(values[1][2], float)
    footer = {row[0]: row[1] for row in values[5:]}
    assert footer["group_by"] == "country, time"
    assert footer["Source"].startswith('Signals API POST /api/v1/signals/query {"bucket":"day"')


def test_compare_and_intervals_add_columns_with_readable_headers(run, fake):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Compared", "query", "window=7d",
                         "group_by=country", "--compare", "--intervals", "limit=3")
    assert status == 0, err
    header = fake.values(SHEET, "Compared")[0]
    assert header[:5] == ["country_id", "country_name", "suppressions", "unique_users", "events"]
    assert header[5:8] == ["suppressions, previous period", "unique_users, previous period", "events, previous period"]
    assert header[8:10] == ["suppressions, change %", "suppressions, beyond noise"]
    assert header[-2:] == ["events, low (90 % interval)", "events, high (90 % interval)"]
    row = fake.values(SHEET, "Compared")[1]
    assert row[header.index("suppressions, beyond noise")] in ("true", "false")
    assert isinstance(row[header.index("suppressions, high (90 % interval)")], int)
    low, value, high = (row[header.index(h)] for h in ("suppressions, low (90 % interval)", "suppressions",
                                                       "suppressions, high (90 % interval)"))
    assert low <= value <= high
    footer = {r[0]: r[1] for r in fake.values(SHEET, "Compared")[5:] if len(r) > 1}
    assert '"compare":"previous_period"' in footer["Source"] and '"intervals":true' in footer["Source"]
    # the same as name=value parameters, on a GET endpoint
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Geo", "geo-heat", "window=7d",
                         "compare=previous_period", "--intervals")
    assert status == 0, err
    assert "suppressions, previous period" in fake.values(SHEET, "Geo")[0]


# -- refresh: replaced whole, skipped when unchanged, kept on failure -------------------------

def test_unchanged_etag_is_not_rewritten(run, fake):
    args = ("push", "--spreadsheet", SHEET, "--worksheet", "Top", "top-keywords", "window=7d", "limit=3")
    assert run(*args)[0] == 0
    before = fake.grid(SHEET, "Top")
    status, _, err = run(*args)
    assert status == 0
    assert "unchanged" in err and "not rewritten" in err
    assert len(batch_updates(fake)) == 1
    assert fake.grid(SHEET, "Top") == before
    # other parameters are another report: written, and the old rows are gone
    assert run("push", "--spreadsheet", SHEET, "--worksheet", "Top", "top-keywords", "window=7d", "limit=2")[0] == 0
    assert len(batch_updates(fake)) == 2
    values = fake.values(SHEET, "Top")
    assert len(values) == 1 + 2 + 1 + 7 and fake.sheet(SHEET, "Top").rows == len(values)  # the footer says "2 of 8 rows"
    assert stored_report(fake, "Top")["request"].endswith("limit=2&window=7d")


def test_existing_worksheet_content_is_replaced(run, fake):
    existing = fake.sheet(SHEET, "Existing")
    existing.cells[(50, 10)] = {"userEnteredValue": {"stringValue": "old"}}
    assert run("push", "--spreadsheet", SHEET, "--worksheet", "Existing", "geo-heat", "window=24h")[0] == 0
    sheet = fake.sheet(SHEET, "Existing")
    assert sheet.sheet_id == existing.sheet_id and (50, 10) not in sheet.cells
    assert fake.values(SHEET, "Existing")[0] == ["geo_key", "label", "suppressions", "unique_users", "keyword_count"]


@pytest.mark.parametrize("failure", ["inside the batch", "server error"])
def test_a_failed_write_leaves_the_previous_data(run, fake, failure):
    assert run("push", "--spreadsheet", SHEET, "--worksheet", "Top", "top-keywords", "window=24h", "limit=3")[0] == 0
    before, report = fake.grid(SHEET, "Top"), stored_report(fake, "Top")
    if failure == "inside the batch":
        fake.fail_at_request = 1  # after the resize: the grid is already changed in the copy
    else:
        fake.fail_batches = [(500, "Internal error encountered.")]
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Top", "top-keywords", "window=7d", "limit=5")
    assert status == 1
    assert "keeps its previous content" in err
    assert fake.grid(SHEET, "Top") == before and stored_report(fake, "Top") == report


def test_sync_failing_in_the_middle_writes_the_others_and_keeps_the_failed_ones(fixture_data_dir, fixture_store,
                                                                                  accounts, keys, fake, tmp_path, capsys):
    config = write_config(tmp_path, [("A", "top-keywords", {"window": "24h", "limit": 3}),
                                     ("B", "geo-heat", {"window": "24h"}),
                                     ("C", "keyword-activity", {"window": "7d"}),
                                     ("D", "trending", {"window": "24h"})])
    settings = ConnectorSettings(sheets_api_url=fake.url)
    with serve(make_app(fixture_data_dir, fixture_store, accounts, Ticker())) as url:
        front = FlakyFront(url)
        api = SignalsClient(front.url, keys["observer"], max_retries=0, sleep=lambda s: None)
        assert main(["sync", str(config)], settings=settings, api=api) == 0
        first = {name: fake.grid(SHEET, name) for name in "ABCD"}
        # next round: B's request fails at the API, C's write fails at Sheets
        for name in "ABCD":  # forget the ETags, so that every report is fetched and written again
            fake.sheet(SHEET, name).metadata.clear()
        front.plan = ["relay", "relay", "503"]  # account, A, B
        fake.fail_batches = [None, (500, "Internal error encountered.")]  # A passes, C fails
        status = main(["sync", str(config)], settings=settings, api=api)
        front.close()
        api.close()
    err = capsys.readouterr().err
    assert status == 1
    assert "B (geo-heat): failed: Signals API refused the request (503" in err
    assert "C (keyword-activity): failed: Google Sheets refused the write: [500]" in err
    assert "2 of 4 reports failed" in err
    for name in "BC":
        assert fake.grid(SHEET, name) == first[name]
    assert fake.sheet(SHEET, "A").metadata and fake.sheet(SHEET, "D").metadata  # rewritten
    assert not fake.sheet(SHEET, "B").metadata and not fake.sheet(SHEET, "C").metadata


# -- sync --------------------------------------------------------------------------------------

def test_sync_writes_every_report_with_progress_then_skips_unchanged(run, fake, tmp_path):
    config = write_config(tmp_path, [("Top", "top-keywords", {"window": "7d", "limit": 5}),
                                     ("Trend", "trending", {"window": "24h", "min_baseline": 5}),
                                     ("Climate", "keyword_timeseries", {"keyword": "snakes", "bucket": "day"})])
    status, _, err = run("sync", str(config))
    assert status == 0, err
    assert "reports: 100%" in err and "3/3" in err  # tqdm's progress
    for name in ("Top", "Trend", "Climate"):
        assert f"{name} (" in err and fake.values(SHEET, name)
    assert len(batch_updates(fake)) == 3 + 1  # each report, then the run log
    status, _, err = run("sync", str(config))
    assert status == 0 and err.count(": unchanged:") == 3 and len(batch_updates(fake)) == 4 + 1
    assert [row[1:3] for row in fake.values(SHEET, "Signals run log")[1:]] == [
        ["Top (top-keywords)", "unchanged"], ["Trend (trending)", "unchanged"], ["Climate (keyword_timeseries)", "unchanged"],
        ["Top (top-keywords)", 5], ["Trend (trending)", fake.values(SHEET, "Trend").index([]) - 1],
        ["Climate (keyword_timeseries)", fake.values(SHEET, "Climate").index([]) - 1]]


def test_sync_every_keeps_refreshing(run, fake, tmp_path):
    config = write_config(tmp_path, [("Top", "top-keywords", {"limit": 2})])
    slept = []
    status, _, err = run("sync", str(config), "--every", "1h", sleep=slept.append, rounds=2)
    assert status == 0 and err.count("round done") == 2
    assert len(slept) == 1 and 3590 < slept[0] <= 3600
    assert parse_every("30m") == 1800 and parse_every("1d") == 86400


def test_dry_run_prints_and_writes_nothing(run, fake, tmp_path):
    status, out, err = run("push", "--dry-run", "--spreadsheet", SHEET, "--worksheet", "Top", "top-keywords",
                           "window=24h", "limit=2", sheets=False)  # no Google credentials needed
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == f"== GET /api/v1/signals/top-keywords?limit=2&window=24h -> {SHEET} / Top"
    assert lines[1].split() == ["keyword_raw", "suppressions", "users_est", "rank"]
    assert lines[2].split()[:3] == ["elon", "musk", "80"]
    assert any(line.startswith("as_of (UTC)") and "2026-03-10 12:00" in line for line in lines)
    assert fake.log == []
    config = write_config(tmp_path, [("Top", "top-keywords", {"limit": 1}), ("Geo", "geo-heat", {})])
    status, out, _ = run("sync", str(config), "--dry-run", sheets=False)
    assert status == 0 and out.count("== GET") == 2 and fake.log == []


# -- clear messages and exit statuses -------------------------------------------------------

def test_unknown_endpoint(run, fake):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "T", "top-keyword", "limit=3")
    assert status == 2
    assert "There is no endpoint 'top-keyword'. Did you mean 'top-keywords'?" in err
    assert fake.log == []


def test_bad_parameters_in_the_apis_words(run, fake, tmp_path):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "T", "top-keywords", "limit=0", "windw=7d")
    assert status == 2
    assert "windw: unknown parameter. Did you mean 'window'?" in err
    assert "limit: 0 is out of bounds; expected an integer from 1 to 500" in err
    config = write_config(tmp_path, [("A", "top-keywords", {"limit": 5}), ("B", "geo-heat", {"level": "planet"})])
    status, _, err = run("sync", str(config))
    assert status == 2 and "B (geo-heat): level: 'planet' is not allowed" in err
    assert fake.log == []  # nothing written: every report is checked first


def test_bad_config(run, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[report]]\nendpoint = "top-keywords"\nparam = {}\n')
    status, _, err = run("sync", str(path))
    assert status == 2
    assert "report 1: unknown key(s) param" in err and "report 1: worksheet is missing" in err
    assert "spreadsheet is missing" in err
    assert run("sync", str(tmp_path / "none.toml"))[0] == 2
    status, _, err = run("sync", str(write_config(tmp_path, [("A", "top-keywords", {})])), "--every", "10s")
    assert status == 2 and "--every must be at least 1m" in err


def test_missing_and_wrong_credentials(run, tmp_path, monkeypatch):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "T", "top-keywords", sheets=False)
    assert status == 2 and "No Google credentials: pass --credentials FILE or set GOOGLE_APPLICATION_CREDENTIALS" in err
    status, _, err = run("push", "--credentials", str(tmp_path / "nope.json"), "--spreadsheet", SHEET,
                         "--worksheet", "T", "top-keywords", sheets=False)
    assert status == 2 and "does not exist" in err
    not_a_key = tmp_path / "user.json"
    not_a_key.write_text('{"type": "authorized_user"}')
    status, _, err = run("push", "--credentials", str(not_a_key), "--spreadsheet", SHEET, "--worksheet", "T",
                         "top-keywords", sheets=False)
    assert status == 2 and "is not a service account key file" in err
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "T", "top-keywords", key=None)
    assert status == 2 and "No Signals API key: set SIGNALS_API_KEY" in err


def test_spreadsheet_missing_or_not_shared(run, fake):
    status, _, err = run("push", "--spreadsheet", "nope", "--worksheet", "T", "top-keywords")
    assert status == 1 and "Spreadsheet nope was not found" in err
    fake.create("private")
    fake.forbidden.add("private")
    status, _, err = run("push", "--spreadsheet", "private", "--worksheet", "T", "top-keywords")
    assert status == 1 and "Spreadsheet private is not shared with the service account" in err


def test_plan_too_low(run, fake):
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Q", "query", "window=7d", key="observer")
    assert status == 1
    assert "Plan Observer cannot call query (POST /api/v1/signals/query); it needs the Analyst plan or higher." in err
    assert batch_updates(fake) == []
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Q", "top-keywords", key="observer")
    assert status == 0, err


def test_wrong_key(run, fake, api_url):
    settings = ConnectorSettings(api_url=api_url, api_key="sig_live_" + "x" * 40, sheets_api_url=fake.url)
    assert main(["push", "--spreadsheet", SHEET, "--worksheet", "T", "top-keywords"], settings=settings) == 1


# -- the real command ------------------------------------------------------------------------

def test_python_dash_m_connectors_sheets(api_url, fake, keys):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "GOOGLE_"))}
    env.update(SIGNALS_API_URL=api_url, SIGNALS_API_KEY=keys["observer"], SIGNALS_SHEETS_API_URL=fake.url)
    command = [sys.executable, "-m", "connectors.sheets", "push", "--spreadsheet", SHEET, "--worksheet", "Activity",
               "keyword-activity", "window=7d", "type=added"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert fake.values(SHEET, "Activity")[0][:3] == ["keyword", "adds", "removes"]
    done = subprocess.run([*command[:-1], "type=add"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "type: 'add' is not allowed (did you mean 'added'?); expected one of added, removed, edited, all" in done.stderr
    assert FIXTURE_NOW  # the served API runs on the fixture's clock


# -- the spreadsheet user's page, docs/sheets.md ------------------------------------------------

def sheets_page() -> str:
    return (ROOT / "docs" / "sheets.md").read_text()


def test_the_sheets_page_examples_are_valid_reports(api_url, keys, tmp_path, run):
    import shlex

    from connectors.sheets import Runner, load_config

    section = sheets_page()
    config = tmp_path / "reports.toml"
    config.write_text(section.split("```toml\n", 1)[1].split("```", 1)[0])
    specs = load_config(config).reports
    assert len(specs) == 4 and specs[3].history and specs[3].backfill == 30
    with SignalsClient(api_url, keys["analyst"]) as api:
        assert len(Runner(api, None).check(specs)) == 4
    pushes = [line for line in section.replace("\\\n", " ").splitlines() if "connectors.sheets push" in line]
    assert len(pushes) == 7  # six examples (one with --all) and the emulator's
    for line in pushes:  # each, as written, on the command line (printed, not written)
        words = shlex.split(line.split("  #")[0])
        args = words[words.index("connectors.sheets") + 1:]
        status, out, err = run(*args, *([] if "--dry-run" in args else ["--dry-run"]), sheets=False)
        assert status == 0, (line, err)
        assert out.startswith("== ")


def test_every_connector_setting_is_documented_in_the_sheets_page():
    import dataclasses

    from connectors.settings import ConnectorSettings

    # The MCP server's and the proxies' settings are documented on their own pages (docs/mcp.md, docs/operations.md).
    read = {field.metadata["env"] for field in dataclasses.fields(ConnectorSettings)
            if not field.name.startswith("mcp_") and field.name != "trusted_proxies"}
    assert read == {"SIGNALS_API_URL", "SIGNALS_API_KEY", "SIGNALS_SHEETS_API_URL", "GOOGLE_APPLICATION_CREDENTIALS"}
    section = sheets_page()
    for name in read:
        assert f"`{name}`" in section, name


def test_sync_prints_tables_on_stdout_and_its_progress_on_stderr_apart(api_url, keys, tmp_path):
    """In a terminal (stdout and stderr on one pty), each printed table starts on a line of its
    own: the progress bar is taken off before the table and drawn again after it."""
    import fcntl
    import pty
    import struct
    import termios

    config = write_config(tmp_path, [("Top", "top-keywords", {"limit": 2}), ("Geo", "geo-heat", {}),
                                     ("Trend", "trending", {"window": "24h", "min_baseline": 5})])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "GOOGLE_"))}
    env.update(SIGNALS_API_URL=api_url, SIGNALS_API_KEY=keys["analyst"], TERM="xterm")
    main_end, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a terminal 120 columns wide
    done = subprocess.run([sys.executable, "-m", "connectors.sheets", "sync", str(config), "--dry-run"], cwd=ROOT,
                          env=env, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, timeout=60)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main_end, 65536)
        except OSError:  # the other end is closed: everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main_end)
    assert done.returncode == 0, shown
    segments = [part for line in shown.decode().splitlines() for part in line.split("\r")]
    tables = [s for s in segments if "== GET" in s]
    assert len(tables) == 3 and all(s.startswith("== GET") for s in tables), tables
    assert any("reports: 100%" in s for s in segments)
    # and apart, as a pipe sees them: the tables on stdout only, the progress on stderr only
    piped = subprocess.run([sys.executable, "-m", "connectors.sheets", "sync", str(config), "--dry-run"], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=60)
    assert piped.stdout.count("== GET") == 3 and "reports:" not in piped.stdout
    assert "reports: 100%" in piped.stderr and "== GET" not in piped.stderr
