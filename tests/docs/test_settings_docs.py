"""Every environment variable the settings read (the service's, and those of the processes that
call it: dashboard, MCP server, connectors) is documented in .env.example with its default value,
and .env.example documents nothing else."""

import dataclasses

import pytest

from connectors.settings import ConnectorSettings, ConnectorSettingsError
from dashboard.settings import DashboardSettings
from service.settings import Settings
from tests.support.processes import ROOT

# Left empty in .env.example on purpose, and why (reading an empty value gives the default).
EMPTY_ON_PURPOSE = {
    "SIGNALS_ACCOUNTS_URL": "the default is derived from SIGNALS_DATA_DIR",
    "REDIS_URL": "unset = no Redis (in-process cache and limits)",
    "SIGNALS_SECRET": "a secret; no default (scripts/run.sh makes one per install; without it the processes that use it refuse)",
    "WEB_CONCURRENCY": "the default 0 means 'size for the machine' (gunicorn.conf.py)",
    "SIGNALS_TRUSTED_PROXIES": "the default is no proxies",
    "SIGNALS_API_KEY": "a secret; no default",
    "SIGNALS_SHEETS_API_URL": "unset = Google's Sheets API",
    "SIGNALS_CLICKHOUSE_URL": "no default database; needed only with SIGNALS_ENGINE=clickhouse",
    "SIGNALS_RUN_DIR": "the default is derived from SIGNALS_DATA_DIR",
}
# Read but not in .env.example, and why.
NOT_IN_EXAMPLE = {
    # Google's own variable (docs/sheets.md): google-auth would try to load an empty one
    # exported from a copied .env as a file.
    "GOOGLE_APPLICATION_CREDENTIALS",
}


def example() -> dict[str, str]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def read_by(cls: type) -> set[str]:
    return {field.metadata["env"] for field in dataclasses.fields(cls)}


def test_every_setting_is_documented_in_env_example():
    read = read_by(Settings) | read_by(ConnectorSettings) | read_by(DashboardSettings)
    documented = set(example())
    assert read - documented == NOT_IN_EXAMPLE, "settings read but not documented in .env.example"
    assert documented - read == set(), ".env.example documents settings nobody reads"


def test_env_example_gives_each_default():
    values = example()
    assert {name for name, value in values.items() if not value} == set(EMPTY_ON_PURPOSE), \
        "a setting is left empty in .env.example without a reason in EMPTY_ON_PURPOSE (or has a value now)"
    # Read through each process family's reader, the example's values are the defaults.
    assert Settings.from_env(values) == Settings()
    assert ConnectorSettings.from_env(values) == ConnectorSettings()
    assert DashboardSettings.from_env(values) == DashboardSettings()



def test_a_malformed_dashboard_setting_is_refused_naming_its_variable():
    with pytest.raises(ConnectorSettingsError, match="SIGNALS_DASHBOARD_PORT must be an integer"):
        DashboardSettings.from_env({"SIGNALS_DASHBOARD_PORT": "80a"})
    assert DashboardSettings.from_env({"SIGNALS_API_URL": "http://api:9000/"}).api_url == "http://api:9000"
