"""gunicorn's access log without secrets.

Keys and browser tokens belong in the Authorization header, which the access log format does not
show; but a client may still put one in the URL (`?api_key=sig_live_...`), and the request line,
the query string and the Referer are logged. `redact` replaces, in those, the value of any
parameter named like a credential and anything shaped like one of our keys or tokens
(service/observability/logging_setup.py), so none reaches a log file whichever way it was sent
(the request itself is refused: credentials are read from the header only).
"""

from __future__ import annotations

import re
from typing import Any, cast

from gunicorn.glogging import Logger as GunicornLogger

from service.observability.logging_setup import REDACTED, redact_secrets

# name=value pairs whose name says credential (api_key, apikey, key, token, access_token, ...)
_CREDENTIAL = re.compile(
    r"(?i)((?:^|[?&;])(?:api[_-]?key|key|token|access[_-]?token|auth|authorization|password|secret)=)[^&;#\s]*")
_URL_ATOMS = ("r", "q", "f", "U")


def redact(text: str | None) -> str | None:
    """`text` with credential parameters' values and anything shaped like a key or a browser token replaced."""
    if not isinstance(text, str) or not text:
        return text
    return redact_secrets(_CREDENTIAL.sub(lambda m: m.group(1) + REDACTED, text))


class Logger(GunicornLogger):
    """gunicorn's logger with the URL atoms of the access log redacted."""

    def atoms(self, resp, req, environ, request_time):
        # A dict whose keys include ones made per header ("{name}i"): the stub's TypedDict has only the fixed ones.
        atoms = cast(dict[str, Any], super().atoms(resp, req, environ, request_time))
        for name in _URL_ATOMS:
            atoms[name] = redact(atoms.get(name))
        for name in ("{authorization}i", "{cookie}i"):
            if name in atoms:
                atoms[name] = REDACTED
        return atoms
