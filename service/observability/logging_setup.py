"""Log format for every process. Never log API keys, browser tokens, Authorization headers or raw
user ids.

No code of ours logs a key, a token or a header; as a last guard, every record that reaches the
handlers set up here has anything shaped like a key (`sig_live_...`) or a token (a JWT:
`eyJ...`.`...`.`...`) replaced before it is written (`redact_secrets`), whoever logged it. The
access log (service/server/gunicorn_logging.py) does the same to the URLs it writes.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
# Our keys (sig_live_, sig_test_, sig_ingest_), and JWTs: a JSON header always starts with '{"',
# "eyJ" in base64url, and a browser token is one (service/accounts/tokens.py).
SECRET_SHAPES = re.compile(r"sig_(?:live|test|ingest)_[A-Za-z0-9]+|eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def redact_secrets(text: str) -> str:
    """`text` with anything shaped like a key or a token replaced."""
    return SECRET_SHAPES.sub(REDACTED, text)


class RedactSecrets(logging.Filter):
    """A handler's filter: the record's message (and its traceback's text) without keys or tokens."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "sig_" in message or "eyJ" in message:
            record.msg, record.args = redact_secrets(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and ("sig_" in record.exc_text or "eyJ" in record.exc_text):
            record.exc_text = redact_secrets(record.exc_text)
        return True


def configure_logging(level: str = "info") -> None:
    numeric = getattr(logging, level.upper(), logging.INFO)
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s")
    logging.getLogger().setLevel(numeric)  # basicConfig does nothing the second time (a command's own level)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())
