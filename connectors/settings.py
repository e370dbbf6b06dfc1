"""The connectors' settings: the only place in `connectors/` that reads the environment.

The connectors are a separate program from the service (they talk to it over HTTP), so they do not
use `service/settings.py`; these are the few variables a user of the client or the Sheets connector
sets. Every one is listed in the README ("Google Sheets").
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

DEFAULT_API_URL = "http://127.0.0.1:8000"


@dataclasses.dataclass(frozen=True)
class ConnectorSettings:
    api_url: str = DEFAULT_API_URL       # SIGNALS_API_URL: where the Signals API answers
    api_key: str | None = None           # SIGNALS_API_KEY: the key sent as Authorization: Bearer
    # SIGNALS_SHEETS_API_URL: a Sheets-compatible server to use instead of Google's, without
    # credentials (the way Google's emulators are selected); unset = Google with a service account.
    sheets_api_url: str | None = None
    # GOOGLE_APPLICATION_CREDENTIALS: the service account's JSON key file (Google's own variable).
    google_credentials: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ConnectorSettings:
        env = os.environ if environ is None else environ

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        return cls(
            api_url=text("SIGNALS_API_URL") or DEFAULT_API_URL,
            api_key=text("SIGNALS_API_KEY"),
            sheets_api_url=text("SIGNALS_SHEETS_API_URL"),
            google_credentials=text("GOOGLE_APPLICATION_CREDENTIALS"),
        )
