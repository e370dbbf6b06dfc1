"""The Sheets connector's tests: the fake Sheets server (connectors/sheets/emulator.py), the real API
served from a thread on the fixture data, and the connector's main() against both."""

from __future__ import annotations

import pytest

from connectors.settings import ConnectorSettings
from connectors.sheets import main
from connectors.sheets.emulator import SheetsEmulator
from tests.support.api_server import Ticker, make_app, serve
from tests.support.sheets_reports import SHEET


@pytest.fixture
def fake():
    server = SheetsEmulator()
    server.create(SHEET, sheets=("Sheet1", "Existing"))
    yield server
    server.close()


@pytest.fixture
def api_url(fixture_data_dir, fixture_store, accounts):
    with serve(make_app(fixture_data_dir, fixture_store, accounts, Ticker())) as url:
        yield url


@pytest.fixture
def run(api_url, fake, keys, capsys):
    """main() with settings pointing at the served API and the fake Sheets; returns (status, out, err)."""
    def go(*argv: str, key: str = "analyst", sheets: bool = True, **options):
        settings = ConnectorSettings(api_url=api_url, api_key=keys[key] if key else None,
                                     sheets_api_url=fake.url if sheets else None)
        status = main(list(argv), settings=settings, **options)
        out, err = capsys.readouterr()
        return status, out, err
    return go
