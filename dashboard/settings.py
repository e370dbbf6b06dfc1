"""The dashboard's settings: the only place in dashboard/ that reads the environment."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from connectors.settings import DEFAULT_API_URL, ConnectorSettings, Network

DEFAULT_PORT = 8050


@dataclasses.dataclass(frozen=True)
class DashboardSettings:
    api_url: str = DEFAULT_API_URL  # SIGNALS_API_URL: where the Signals API answers
    port: int = DEFAULT_PORT        # SIGNALS_DASHBOARD_PORT: where the dashboard listens (Procfile)
    host: str = "127.0.0.1"         # SIGNALS_HOST: the address it listens on (the API's setting too)
    # SIGNALS_TRUSTED_PROXIES (read by connectors/settings.py): proxies in front of the dashboard
    # whose X-Forwarded-For is passed on to the API; anyone else's peer address is sent instead.
    trusted_proxies: tuple[Network, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DashboardSettings:
        env = os.environ if environ is None else environ
        port = env.get("SIGNALS_DASHBOARD_PORT", "").strip()
        return cls(api_url=(env.get("SIGNALS_API_URL", "").strip() or DEFAULT_API_URL).rstrip("/"),
                   port=int(port) if port else DEFAULT_PORT, host=env.get("SIGNALS_HOST", "").strip() or "127.0.0.1",
                   trusted_proxies=ConnectorSettings.from_env(env).trusted_proxies)
