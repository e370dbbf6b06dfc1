"""Log format for every process. Never log API keys, Authorization headers or raw user ids."""

from __future__ import annotations

import logging


def configure_logging(level: str = "info") -> None:
    numeric = getattr(logging, level.upper(), logging.INFO)
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s")
    logging.getLogger().setLevel(numeric)  # basicConfig does nothing the second time (a command's own level)
