"""Reaching Google Sheets with gspread: a service account's key, or a Sheets-compatible server
(SIGNALS_SHEETS_API_URL, without credentials, as Google's emulators are selected); the retry of
Google's per-minute write quota; Google's errors in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gspread
import requests
import tenacity

from connectors.settings import ConnectorSettings
from connectors.sheets.errors import UsageError

GOOGLE_SHEETS_ORIGIN = gspread.urls.SPREADSHEETS_API_V4_BASE_URL.removesuffix("/v4/spreadsheets")
SPREADSHEETS_SCOPE = "https://www.googleapis.com/auth/spreadsheets"
SHEETS_TIMEOUT = (10, 60)  # seconds: connect, read


class RebasedSession(requests.Session):
    """A requests Session that sends gspread's Google Sheets calls to another server."""

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self._base = base_url.rstrip("/")

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        if isinstance(url, str) and url.startswith(GOOGLE_SHEETS_ORIGIN):
            url = self._base + url[len(GOOGLE_SHEETS_ORIGIN):]
        return super().request(method, url, *args, **kwargs)


def google_client(settings: ConnectorSettings, credentials: str | None) -> gspread.Client:
    if settings.sheets_api_url:
        client = gspread.Client(auth=None, session=RebasedSession(settings.sheets_api_url))
    else:
        path = credentials or settings.google_credentials
        if not path:
            raise UsageError("No Google credentials: pass --credentials FILE or set GOOGLE_APPLICATION_CREDENTIALS to "
                             "a service account's JSON key file, and share the spreadsheet with that account's "
                             "address (client_email in the file).")
        if not Path(path).is_file():
            raise UsageError(f"Google credentials file {path} does not exist.")
        try:
            client = gspread.service_account(filename=path, scopes=[SPREADSHEETS_SCOPE])
        except (ValueError, KeyError) as exc:
            raise UsageError(f"{path} is not a service account key file: {exc}") from None
    client.set_timeout(SHEETS_TIMEOUT)
    return client


def account_email(client: gspread.Client) -> str | None:
    return getattr(getattr(client.http_client, "auth", None), "service_account_email", None)


def api_error(exc: gspread.exceptions.APIError) -> str:
    return f"[{exc.code}] {exc.error.get('message', '')}".strip()


def _quota_refusal(exc: BaseException) -> bool:
    return isinstance(exc, gspread.exceptions.APIError) and exc.code == 429


# Google's write quota (per minute) answers 429: wait and try again, a few times. A 429 applied nothing.
sheets_retry = tenacity.retry(retry=tenacity.retry_if_exception(_quota_refusal), reraise=True,
                              wait=tenacity.wait_exponential_jitter(max=32), stop=tenacity.stop_after_attempt(4))
