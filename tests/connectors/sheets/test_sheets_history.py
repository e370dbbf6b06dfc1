"""History worksheets (--history, --backfill, the TOML's history/backfill) and sync's run log,
with the real gspread over real HTTP against the fake Sheets server and the real API."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from connectors.client import SignalsClient
from connectors.report import sheets_serial
from connectors.sheets import METADATA_KEY, RUN_LOG_ROWS
from connectors.sheets.emulator import SheetsEmulator
from tests.support.sheets_reports import SHEET, batch_updates, write_config

AS_OF = dt.datetime(2026, 3, 10, 12, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
PUSH = ("push", "--spreadsheet", SHEET, "--worksheet", "Top", "--history", "top-keywords", "window=24h", "limit=3")


@pytest.fixture
def fake():
    server = SheetsEmulator()
    server.create(SHEET, sheets=("Sheet1",))
    yield server
    server.close()


def stored(fake, worksheet="Top"):
    meta = [m for m in fake.sheet(SHEET, worksheet).metadata if m["metadataKey"] == METADATA_KEY]
    return json.loads(meta[0]["metadataValue"])


def api_rows(api_url, key, moment, **params):
    """What the API answers for that period, as the sheet's rows (as_of serial first)."""
    with SignalsClient(api_url, key) as api:
        body = api.top_keywords(as_of=moment.strftime("%Y-%m-%dT%H:%M:%SZ"), **params)
    return [[pytest.approx(sheets_serial(moment)), r["keyword_raw"], r["suppressions"], r["users_est"], r["rank"]]
            for r in body["keywords"]]


def test_history_appends_with_as_of_then_skips_the_period_it_holds(run, fake, api_url, keys):
    status, _, err = run(*PUSH)
    assert status == 0, err
    assert "Top (top-keywords): written: 3 rows appended for as_of 2026-03-10T12:00:00Z" in err
    values = fake.values(SHEET, "Top")
    assert values[0] == ["as_of (UTC)", "keyword_raw", "suppressions", "users_est", "rank"]
    assert values[1:] == api_rows(api_url, keys["analyst"], AS_OF, window="24h", limit=3)
    grid = fake.grid(SHEET, "Top")
    assert grid[1][0]["userEnteredFormat"]["numberFormat"]["type"] == "DATE_TIME"
    assert grid[0][0]["note"].startswith("Signals API GET /api/v1/signals/top-keywords?limit=3&window=24h")
    assert (fake.sheet(SHEET, "Top").rows, fake.sheet(SHEET, "Top").frozen_rows) == (4, 1)  # no footer
    # the next hourly run: the same ETag (304), nothing appended
    status, _, err = run(*PUSH)
    assert status == 0 and "unchanged: the sheet holds as_of 2026-03-10T12:00:00Z; nothing appended" in err
    assert len(batch_updates(fake)) == 1 and len(fake.values(SHEET, "Top")) == 4
    # another ETag (a new deploy, another client) for an as_of the sheet holds: still skipped
    meta = fake.sheet(SHEET, "Top").metadata[0]
    meta["metadataValue"] = json.dumps({**stored(fake), "etag": '"another"'})
    status, _, err = run(*PUSH)
    assert status == 0 and "nothing appended" in err and len(batch_updates(fake)) == 1


def test_backfill_fills_the_periods_before_in_one_write_oldest_first(run, fake, api_url, keys):
    status, _, err = run(*PUSH, "--backfill", "3")
    assert status == 0, err
    assert len(batch_updates(fake)) == 1
    values = fake.values(SHEET, "Top")
    expected = []
    for moment in (AS_OF - 2 * DAY, AS_OF - DAY, AS_OF):  # one window (24h) apart
        expected += api_rows(api_url, keys["analyst"], moment, window="24h", limit=3)
    assert values[1:] == expected
    assert stored(fake)["periods"] == ["2026-03-08T12:00:00Z", "2026-03-09T12:00:00Z", "2026-03-10T12:00:00Z"]
    # a longer backfill later appends only the periods missing, below the others
    status, _, err = run(*PUSH, "--backfill", "4")
    assert status == 0 and "appended for as_of 2026-03-07T12:00:00Z" in err
    older = api_rows(api_url, keys["analyst"], AS_OF - 3 * DAY, window="24h", limit=3)
    assert older and fake.values(SHEET, "Top")[1:] == expected + older  # kept as they were, the new ones below
    assert run(*PUSH, "--backfill", "4")[0] == 0 and len(batch_updates(fake)) == 2


def test_history_adds_to_a_history_started_earlier(run, fake):
    fake.create("ss-2")
    args = ("push", "--spreadsheet", "ss-2", "--worksheet", "Top", "--history", "top-keywords", "window=24h", "limit=3")
    assert run(*args, "--backfill", "2")[0] == 0
    before = fake.values("ss-2", "Top")
    # hourly runs add below; a period added later keeps the columns the history started with
    sheet = fake.sheet("ss-2", "Top")
    metadata = json.loads(sheet.metadata[0]["metadataValue"])
    metadata["periods"] = metadata["periods"][:1]  # as if the current period were not there yet
    metadata["etag"] = None
    sheet.metadata[0]["metadataValue"] = json.dumps(metadata)
    status, _, err = run(*args)
    assert status == 0, err
    after = fake.values("ss-2", "Top")
    assert after[:len(before)] == before and after[len(before):] == before[-3:]
    assert fake.sheet("ss-2", "Top").rows == len(after)


def test_another_request_does_not_write_into_a_history(run, fake):
    assert run(*PUSH)[0] == 0
    before = fake.grid(SHEET, "Top")
    status, _, err = run("push", "--spreadsheet", SHEET, "--worksheet", "Top", "--history", "top-keywords", "window=7d")
    assert status == 1
    assert "worksheet 'Top' holds the history of another request (GET /api/v1/signals/top-keywords?limit=3&window=24h)" in err
    assert fake.grid(SHEET, "Top") == before


@pytest.mark.parametrize("failure", ["the API halfway", "inside the batch", "Sheets server error"])
def test_backfill_is_all_or_nothing(run, fake, failure):
    assert run(*PUSH)[0] == 0
    before, report = fake.grid(SHEET, "Top"), stored(fake)
    if failure == "the API halfway":
        # the periods are fetched newest first; one far back starts before the data's first hour
        status, _, err = run(*PUSH, "--backfill", "200")
        assert status == 1 and "as_of" in err
    else:
        if failure == "inside the batch":
            fake.fail_at_request = 1  # the grid was already grown in Google's working copy
        else:
            fake.fail_batches = [(500, "Internal error encountered.")]
        status, _, err = run(*PUSH, "--backfill", "3")
        assert status == 1 and "the worksheet keeps its previous content" in err
    assert fake.grid(SHEET, "Top") == before and stored(fake) == report
    assert run(*PUSH, "--backfill", "3")[0] == 0  # and once the failure is gone, it is written whole
    assert stored(fake)["periods"] == ["2026-03-08T12:00:00Z", "2026-03-09T12:00:00Z", "2026-03-10T12:00:00Z"]


def test_dry_run_prints_each_period_with_its_as_of(run, fake):
    status, out, err = run(*PUSH, "--backfill", "2", "--dry-run", sheets=False)
    assert status == 0, err
    assert out.splitlines()[0] == (f"== GET /api/v1/signals/top-keywords?limit=3&window=24h -> {SHEET} / Top "
                                   "(history: 2 period(s))")
    blocks = out.split("-- as_of ")[1:]
    assert [b.split(":", 1)[0] for b in blocks] == ["2026-03-09T12", "2026-03-10T12"]
    assert blocks[0].splitlines()[1].split()[:3] == ["as_of", "(UTC)", "keyword_raw"]
    assert all(line.startswith("2026-03-09 12:00") for line in blocks[0].strip().splitlines()[2:])
    assert all(line.startswith("2026-03-10 12:00") for line in blocks[1].strip().splitlines()[2:])
    assert fake.log == []


def test_sync_config_history_backfill_compare_and_the_run_log(run, fake, tmp_path):
    config = write_config(tmp_path, [("Top", "top-keywords", {"window": "24h", "limit": 2}),
                                     ("Geo", "geo-heat", {"window": "24h"})])
    text = config.read_text().replace('worksheet = "Top"', 'worksheet = "Top"\nhistory = true\nbackfill = 2\ncompare = true')
    config.write_text(text.replace('spreadsheet = "ss-1"', 'spreadsheet = "ss-1"\nrun_log = "Runs"'))
    status, _, err = run("sync", str(config))
    assert status == 0, err
    top = fake.values(SHEET, "Top")
    assert [row[0] for row in top[1:]] == [pytest.approx(sheets_serial(AS_OF - DAY))] * (len(top) - 3) + [
        pytest.approx(sheets_serial(AS_OF))] * 2
    assert "suppressions, previous period" in top[0] and "suppressions, beyond noise" in top[0]
    log = fake.values(SHEET, "Runs")
    assert log[0] == ["time (UTC)", "report", "rows written", "error", "note", "privacy budget"]
    assert [row[1:3] for row in log[1:]] == [["Top (top-keywords)", len(top) - 1], ["Geo (geo-heat)", fake.values(SHEET, "Geo").index([]) - 1]]
    # Top's periods were cut at limit=2: the note says how many rows of how many; Geo is whole.
    note = re.fullmatch(r"(\d+) of (\d+) rows: the answer holds more; --all \(all = true\) writes every page", log[1][4])
    assert note and int(note[1]) == len(top) - 1 < int(note[2])
    assert log[2][3:5] == ["", ""] and log[2][5].startswith("privacy budget: ")  # no error, whole
    fake.fail_batches = [(500, "Internal error encountered.")]  # Top is unchanged (no write); Geo's write fails
    fake.sheet(SHEET, "Geo").metadata.clear()
    status, _, err = run("sync", str(config))
    assert status == 1
    log = fake.values(SHEET, "Runs")
    assert log[1][1:3] == ["Top (top-keywords)", "unchanged"] and log[1][3:5] in ([], ["", ""])
    assert log[2][1:3] == ["Geo (geo-heat)", 0] and log[2][3].startswith("Google Sheets refused the write: [500]")
    assert [row[1] for row in log[3:]] == ["Top (top-keywords)", "Geo (geo-heat)"]  # the round before, below
    assert isinstance(log[1][0], float) and log[1][0] >= log[3][0]


def test_the_run_log_keeps_the_newest_runs_only(run, fake, tmp_path):
    config = write_config(tmp_path, [("Top", "top-keywords", {"limit": 1})])
    assert run("sync", str(config))[0] == 0
    log = fake.sheet(SHEET, "Signals run log")
    for row in range(2, RUN_LOG_ROWS + 1):  # as if it had run many times: a full log
        log.cells[(row, 1)] = {"userEnteredValue": {"stringValue": f"old {row}"}}
    log.rows = RUN_LOG_ROWS + 1
    assert run("sync", str(config))[0] == 0
    values = fake.values(SHEET, "Signals run log")
    assert fake.sheet(SHEET, "Signals run log").rows == RUN_LOG_ROWS + 1 == len(values)
    assert values[1][1:3] == ["Top (top-keywords)", "unchanged"] and values[2][1:3] == ["Top (top-keywords)", 1]
    assert values[-1][1] == f"old {RUN_LOG_ROWS - 1}"  # the oldest fell off


def test_history_options_in_the_config_are_checked(run, tmp_path, capsys):
    config = write_config(tmp_path, [("Top", "top-keywords", {})])
    config.write_text(config.read_text().replace('worksheet = "Top"', 'worksheet = "Top"\nbackfill = 0\nhistory = "yes"'))
    status, _, err = run("sync", str(config))
    assert status == 2
    assert "report 1: history is true or false" in err and "report 1: backfill is a number of periods, 1 or more" in err
    with pytest.raises(SystemExit) as exited:
        run("push", "--spreadsheet", SHEET, "--worksheet", "T", "--backfill", "0", "top-keywords")
    assert exited.value.code == 2 and "--backfill: a number of periods, 1 or more" in capsys.readouterr().err
