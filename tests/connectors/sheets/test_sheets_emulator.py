"""The Sheets emulator a person can run (`python -m connectors.sheets.emulator`, docs/sheets.md, "Trying
it without a Google account"): the connector writes to it as to Google, each write is printed, and
`/` shows every worksheet; and the privacy notes the connector puts on cells that read oddly."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx

from connectors.operations import Operations
from connectors.report import build_table
from connectors.sheets.emulator import SheetsEmulator
from tests.support.processes import ROOT
from tests.support.redis_server import free_port


def test_the_emulator_from_the_command_line_shows_what_the_connector_wrote(api_url, keys):
    port = free_port()
    emulator = subprocess.Popen([sys.executable, "-m", "connectors.sheets.emulator", "--port", str(port)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        assert "-- demo / Sheet1" in httpx.get(f"http://127.0.0.1:{port}/").text
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALS_", "GOOGLE_"))}
        env.update(SIGNALS_API_URL=api_url, SIGNALS_API_KEY=keys["analyst"],
                   SIGNALS_SHEETS_API_URL=f"http://127.0.0.1:{port}")
        pushed = subprocess.run([sys.executable, "-m", "connectors.sheets", "push", "--spreadsheet", "demo",
                                 "--worksheet", "Top keywords", "top-keywords", "window=7d", "limit=3"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert pushed.returncode == 0, pushed.stderr
        shown = httpx.get(f"http://127.0.0.1:{port}/").text
        assert "-- demo / Top keywords" in shown and "keyword_raw  suppressions  users_est  rank" in shown
    finally:
        emulator.terminate()
        out, err = emulator.communicate(timeout=10)
    assert "export SIGNALS_SHEETS_API_URL=http://127.0.0.1:" in err
    assert "-- demo / Top keywords" in out and "elon musk" in out  # each write printed


def test_a_port_in_use_is_said_in_words():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = subprocess.run([sys.executable, "-m", "connectors.sheets.emulator", "--port",
                               str(taken.getsockname()[1])], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "choose another --port" in done.stderr and "Traceback" not in done.stderr


def test_cells_that_read_oddly_carry_the_dashboards_note():
    """A 0 beside non-zero counts, −100 % from it, an interval wider than its number: a cell note
    each, worded as the dashboard's marks (connectors.noise_marks), and the legend in the footer."""
    from service.api.openapi import build_openapi

    operation = Operations.from_openapi(build_openapi())["geo_heat"]
    body = {"window": "7d", "level": "country", "disclaimer": "d", "regions": [
        {"geo_key": "GR", "label": "Greece", "suppressions": 92, "unique_users": 0, "keyword_count": 3,
         "previous": {"suppressions": 0, "unique_users": 12, "keyword_count": 3},
         "change": {"suppressions": {"pct": None, "beyond_noise": False},
                    "unique_users": {"pct": -100.0, "beyond_noise": False},
                    "keyword_count": {"pct": 0.0, "beyond_noise": False}},
         "intervals": {"suppressions": [10, 400], "unique_users": [0, 30], "keyword_count": [2, 4]}}]}
    import datetime as dt

    now = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
    table = build_table(operation, {"window": "7d"}, body, now, now)
    header = [c.value for c in table.rows[0]]
    cells = dict(zip(header, table.rows[1], strict=True))
    assert cells["suppressions"].note.startswith("few users: Few users: the 90 % interval of suppressions (10–400)")
    assert cells["unique_users"].note.startswith("suppressed?: Unique users shows 0 while this row's other counts")
    assert cells["suppressions, change %"].note.startswith("was 0: No percentage")
    assert cells["unique_users, change %"].note.startswith("now 0: −100 % because unique users shows 0")
    assert cells["keyword_count"].note is None and cells["geo_key"].note is None
    assert cells["suppressions"].cell_data()["note"] == cells["suppressions"].note  # written to the sheet
    footer = {row[0].value: row[1].value for row in table.rows[table.records + 2:]}
    assert footer["Marks"].startswith("Marks (a cell note: hover the cell) are privacy noise or suppression")
    assert "92 [few users]" in table.text() and "0 [suppressed?]" in table.text()  # --dry-run shows them
    plain = build_table(operation, {}, {**body, "regions": [{**body["regions"][0], "unique_users": 5,
                                                             "intervals": {}, "change": {}, "previous": {}}]}, now, now)
    assert all(c.note is None for row in plain.rows for c in row) and "Marks" not in plain.text()


def test_the_emulator_in_process_prints_each_write():
    written = []
    emulator = SheetsEmulator(on_write=lambda sheet, titles: written.append((sheet, titles)))
    try:
        emulator.create("s1")
        httpx.post(f"{emulator.url}/v4/spreadsheets/s1:batchUpdate", json={"requests": [{"updateCells": {
            "range": {"sheetId": 0, "startRowIndex": 0, "endRowIndex": 1, "startColumnIndex": 0, "endColumnIndex": 2},
            "rows": [{"values": [{"userEnteredValue": {"stringValue": "a"}},
                                 {"userEnteredValue": {"numberValue": 3}, "note": "few users: wide"}]}],
            "fields": "userEnteredValue,note"}}]})
        assert written == [("s1", ["Sheet1"])]
        assert emulator.text("s1", "Sheet1").splitlines()[1] == "a  3 [note: few users]"
    finally:
        emulator.close()
