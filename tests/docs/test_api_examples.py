"""Every `curl` example of the API's page (docs/api.md) and of the README, run against the demo data
set that `scripts/run.sh` makes (1,000,000 events over 90 days, seed 7; the tests' secret):
each answers 200 with data a person can see — records, and numbers that are not all zero."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import shlex
import uuid

import falcon.testing
import pytest

from cache import LocalGate
from service.api.endpoints import ENDPOINTS
from service.api.tiers import Tier
from service.app import create_app
from service.clock import FixedClock
from service.settings import Settings
from service.store.reader import EventStore
from tests.support.default_demo import DEFAULT_DEMO_END
from tests.support.processes import ROOT
from tests.support.secret import TEST_SECRET

API_PAGE = ROOT / "docs" / "api.md"
README = ROOT / "README.md"
RECORDS = tuple(dict.fromkeys(endpoint.records_field for endpoint in ENDPOINTS))
NOW = DEFAULT_DEMO_END + dt.timedelta(minutes=20)  # the served API's clock: the demo's data end just passed
# A relative hour, as the documents write it: $(date -u -d 'N days ago' +%Y-%m-%dT%H:00:00Z)
DATE_COMMAND = re.compile(r"\$\(date -u -d '(\d+) (day|hour)s? ago' \+%Y-%m-%dT%H:00:00Z\)")


def shell_dates(line: str, now: dt.datetime = NOW) -> str:
    """The line with each `date` command replaced by what it prints at `now` (as the shell would)."""
    def printed(match: re.Match) -> str:
        moment = now - dt.timedelta(**{f"{match[2]}s": int(match[1])})
        return moment.strftime("%Y-%m-%dT%H:00:00Z")
    return DATE_COMMAND.sub(printed, line)


def curl_examples(document) -> list[tuple[str, list[str]]]:
    """(the example's text, its curl arguments) for every curl command of the API in the document's
    code blocks."""
    text = document.read_text()
    examples = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        commands, pending = [], ""
        for raw in re.sub(r"\\\n\s*", " ", block).splitlines():
            pending = f"{pending} {raw.strip()}" if pending else raw
            if pending.count("'") % 2 == 0:  # a quoted body may span lines
                commands.append(pending)
                pending = ""
        for line in commands:
            line = line.split("  #")[0].strip()
            if line.startswith("curl ") and "$API/api/v1/signals" in line:
                examples.append((line, shlex.split(shell_dates(line).replace("$KEY", "KEY").replace("$API", "http://api"))))
    return examples


API_EXAMPLES = curl_examples(API_PAGE)
EXAMPLES = API_EXAMPLES + curl_examples(README)


def test_the_api_page_has_an_example_for_every_endpoint():
    paths = {re.search(r"/api/v1/signals(/[a-z-]+)", line).group(1) for line, _ in API_EXAMPLES}
    assert paths == {endpoint.path for endpoint in ENDPOINTS}


def test_every_as_of_in_an_example_is_relative_so_it_works_on_demo_data_made_today():
    """run.sh makes its demo data up to the hour it runs: a fixed as_of falls outside it sooner or later."""
    with_as_of = [line for line, _ in EXAMPLES if "as_of=" in line or '"as_of"' in line]
    assert with_as_of
    for line in with_as_of:
        assert DATE_COMMAND.search(line) and not re.search(r"as_of=\d|\"as_of\": \"\d", line), line
    assert shell_dates("$(date -u -d '3 days ago' +%Y-%m-%dT%H:00:00Z)", dt.datetime(2026, 11, 27, 8, 21, tzinfo=dt.UTC)) \
        == "2026-11-24T08:00:00Z"


@pytest.fixture(scope="module")
def client(default_demo_dir, accounts):
    settings = Settings(data_dir=default_demo_dir, secret=TEST_SECRET, cache_responses=False)  # the demo's secret
    app = create_app(settings, clock=FixedClock(NOW),
                     store=EventStore(default_demo_dir), accounts=accounts, gate=LocalGate())
    return falcon.testing.TestClient(app)


@pytest.fixture(scope="module")
def key(accounts):
    return accounts.create_key(Tier.PROFESSIONAL, subscription=f"docs-{uuid.uuid4().hex[:8]}")[0]


def _request(client, key: str, args: list[str]):
    url = next(a for a in args if a.startswith("http://api"))
    body = args[args.index("-d") + 1] if "-d" in args else None
    path, _, query = url.removeprefix("http://api").partition("?")
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
        return client.simulate_post(path, body=body, headers=headers)
    return client.simulate_get(path, query_string=query, headers=headers)


def _numbers(record: dict) -> list[float]:
    return [v for k, v in record.items() if isinstance(v, int | float) and k not in ("rank",)]


@pytest.mark.parametrize(("line", "args"), EXAMPLES, ids=[line[:90] for line, _ in EXAMPLES])
def test_each_example_shows_data_on_the_demo_set(client, key, line: str, args: list[str]):
    response = _request(client, key, args)
    assert response.status_code == 200, (line, response.text)
    if response.headers["content-type"].startswith("text/csv"):
        rows = list(csv.reader(io.StringIO(response.text.lstrip("\ufeff"))))
        assert len(rows) > 2, line
        assert any(float(cell) > 0 for row in rows[1:] for cell in row[-3:]), line
        return
    body = json.loads(response.text)
    records = next(body[field] for field in RECORDS if field in body)
    assert records, f"{line}: no records"
    with_data = [r for r in records if any(n > 0 for n in _numbers(r))]
    # Visible: most records carry numbers (a timeseries of zeros, every bucket suppressed, is not).
    assert len(with_data) >= max(1, len(records) // 2), f"{line}: {len(with_data)} of {len(records)} records show data"
