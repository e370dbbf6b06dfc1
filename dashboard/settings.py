"""The dashboard's settings: the only place in dashboard/ that reads the environment. Each field
names its variable (connectors.settings' field declaration); its type and default come from the
field. The dashboard is a consumer of the API like the connectors, so it shares their API address
and proxies (the same variables, the same defaults) and never reads service/'s settings."""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from typing import Any

from connectors.settings import (
    DEFAULT_API_URL,
    ConnectorSettingsError,
    Network,
    _env,  # the connectors' field declaration (variable name in the field's metadata)
    parse_networks,
)

DEFAULT_PORT = 8050


@dataclasses.dataclass(frozen=True)
class DashboardSettings:
    # SIGNALS_API_URL: where the Signals API answers (a trailing slash is dropped)
    api_url: str = _env("SIGNALS_API_URL", DEFAULT_API_URL)
    # SIGNALS_DASHBOARD_PORT: where the dashboard listens (dashboard/gunicorn.conf.py, the Procfile)
    port: int = _env("SIGNALS_DASHBOARD_PORT", DEFAULT_PORT)
    # SIGNALS_HOST: the address it listens on (the API's setting too)
    host: str = _env("SIGNALS_HOST", "127.0.0.1")
    # SIGNALS_TRUSTED_PROXIES: proxies in front of the dashboard whose X-Forwarded-For is passed on
    # to the API; anyone else's peer address is sent instead.
    trusted_proxies: tuple[Network, ...] = _env("SIGNALS_TRUSTED_PROXIES", ())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DashboardSettings:
        """Each field from its variable: unset or empty = the field's default; a malformed value
        raises ConnectorSettingsError naming the variable."""
        env = os.environ if environ is None else environ
        types = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            name = field.metadata["env"]
            raw = env.get(name, "").strip()
            try:
                values[field.name] = _parse(types[field.name], raw) if raw else field.default
            except ValueError as exc:
                raise ConnectorSettingsError(f"{name}: {exc}") from None
        return cls(**{**values, "api_url": values["api_url"].rstrip("/")})


def _parse(kind: Any, raw: str) -> Any:
    """A variable's text as the field's type."""
    if kind is int:
        return int(raw)
    if typing.get_origin(kind) is tuple:  # addresses and networks
        return parse_networks(raw)
    return raw
