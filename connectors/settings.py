"""The connectors' settings: the only place in `connectors/` that reads the environment.

The connectors are a separate program from the service (they talk to it over HTTP), so they do not
use `service/settings.py`; these are the few variables a user of the client or the Sheets connector
sets. Every one is listed in the README ("Google Sheets") and in .env.example.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping

DEFAULT_API_URL = "http://127.0.0.1:8000"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ConnectorSettingsError(ValueError):
    """A setting is malformed; the message names the variable."""


def parse_networks(text: str) -> tuple[Network, ...]:
    """'10.0.0.0/8, 127.0.0.1' -> networks (the syntax of the API's SIGNALS_TRUSTED_PROXIES).
    Raises ValueError naming a bad entry."""
    networks = []
    for item in (part.strip() for part in text.split(",")):
        if item:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or network") from None
    return tuple(networks)


@dataclasses.dataclass(frozen=True)
class ConnectorSettings:
    api_url: str = DEFAULT_API_URL       # SIGNALS_API_URL: where the Signals API answers
    api_key: str | None = None           # SIGNALS_API_KEY: the key sent as Authorization: Bearer
    # SIGNALS_SHEETS_API_URL: a Sheets-compatible server to use instead of Google's, without
    # credentials (the way Google's emulators are selected); unset = Google with a service account.
    sheets_api_url: str | None = None
    # GOOGLE_APPLICATION_CREDENTIALS: the service account's JSON key file (Google's own variable).
    google_credentials: str | None = None
    # SIGNALS_TRUSTED_PROXIES: the proxies in front of the dashboard and the MCP server whose
    # X-Forwarded-For they believe when they tell the API who their caller is (the API reads the
    # same variable for the proxies in front of it). Empty: the TCP peer is the caller.
    trusted_proxies: tuple[Network, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ConnectorSettings:
        env = os.environ if environ is None else environ

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        try:
            trusted = parse_networks(env.get("SIGNALS_TRUSTED_PROXIES", ""))
        except ValueError as exc:
            raise ConnectorSettingsError(f"SIGNALS_TRUSTED_PROXIES: {exc}") from None
        return cls(
            api_url=text("SIGNALS_API_URL") or DEFAULT_API_URL,
            api_key=text("SIGNALS_API_KEY"),
            sheets_api_url=text("SIGNALS_SHEETS_API_URL"),
            google_credentials=text("GOOGLE_APPLICATION_CREDENTIALS"),
            trusted_proxies=trusted,
        )
