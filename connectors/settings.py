"""The connectors' settings: the only place in `connectors/` that reads the environment.

The connectors are a separate program from the service (they talk to it over HTTP), so they do not
use `service/settings.py`; these are the few variables a user of the client or the Sheets connector
sets. Every one is listed in docs/sheets.md (the MCP server's in docs/mcp.md) and in .env.example.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from envfields import Network, read_env
from envfields import env_field as _env  # each field names its variable; its type is the annotation

DEFAULT_API_URL = "http://127.0.0.1:8000"
DEFAULT_MCP_PORT = 8001


class ConnectorSettingsError(ValueError):
    """A setting is malformed; the message names the variable."""


@dataclasses.dataclass(frozen=True)
class ConnectorSettings:
    # SIGNALS_API_URL: where the Signals API answers
    api_url: str = _env("SIGNALS_API_URL", DEFAULT_API_URL)
    # SIGNALS_API_KEY: the key sent as Authorization: Bearer
    api_key: str | None = _env("SIGNALS_API_KEY", None)
    # SIGNALS_SHEETS_API_URL: a Sheets-compatible server to use instead of Google's, without
    # credentials (the way Google's emulators are selected); unset = Google with a service account.
    sheets_api_url: str | None = _env("SIGNALS_SHEETS_API_URL", None)
    # GOOGLE_APPLICATION_CREDENTIALS: the service account's JSON key file (Google's own variable).
    google_credentials: str | None = _env("GOOGLE_APPLICATION_CREDENTIALS", None)
    # SIGNALS_TRUSTED_PROXIES: the proxies in front of the dashboard and the MCP server whose
    # X-Forwarded-For they believe when they tell the API who their caller is (the API reads the
    # same variable for the proxies in front of it). Empty: the TCP peer is the caller.
    trusted_proxies: tuple[Network, ...] = _env("SIGNALS_TRUSTED_PROXIES", ())
    # SIGNALS_MCP_HOST, SIGNALS_MCP_PORT: where the MCP server's streamable HTTP transport listens.
    # The port stays text here: only that transport checks it (connectors/mcp/__main__.py), so a
    # bad value does not stop the stdio server or the Sheets connector.
    mcp_host: str = _env("SIGNALS_MCP_HOST", "127.0.0.1")
    mcp_port: str = _env("SIGNALS_MCP_PORT", str(DEFAULT_MCP_PORT))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ConnectorSettings:
        """Each field from its variable (`_env`): unset or empty = the field's default."""
        return cls(**read_env(cls, environ, ConnectorSettingsError))
