"""The dashboard's settings: the only place in dashboard/ that reads the environment. Each field
names its variable; its type and default come from the field (envfields/, the one reader behind
service/ and connectors/ settings too). The dashboard is a consumer of the API like the connectors,
so it shares their API address and proxies (the same variables, the same defaults) and never reads
service/'s settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from connectors.settings import DEFAULT_API_URL, ConnectorSettingsError
from envfields import Network, env_field, read_env

DEFAULT_PORT = 8050


@dataclasses.dataclass(frozen=True)
class DashboardSettings:
    # SIGNALS_API_URL: where the Signals API answers (a trailing slash is dropped)
    api_url: str = env_field("SIGNALS_API_URL", DEFAULT_API_URL)
    # SIGNALS_DASHBOARD_PORT: where the dashboard listens (dashboard/gunicorn.conf.py, the Procfile)
    port: int = env_field("SIGNALS_DASHBOARD_PORT", DEFAULT_PORT)
    # SIGNALS_HOST: the address it listens on (the API's setting too)
    host: str = env_field("SIGNALS_HOST", "127.0.0.1")
    # SIGNALS_TRUSTED_PROXIES: proxies in front of the dashboard whose X-Forwarded-For is passed on
    # to the API; anyone else's peer address is sent instead.
    trusted_proxies: tuple[Network, ...] = env_field("SIGNALS_TRUSTED_PROXIES", ())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DashboardSettings:
        """Each field from its variable: unset or empty = the field's default; a malformed value
        raises ConnectorSettingsError naming the variable."""
        values = read_env(cls, environ, ConnectorSettingsError)
        return cls(**{**values, "api_url": values["api_url"].rstrip("/")})
