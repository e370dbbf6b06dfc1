"""`python -m service keys|data|worker ...`: the admin command line and the worker."""

from __future__ import annotations

import argparse
import os
import sys

from service.cli import data, keys, lander, precompute, worker
from service.observability import metrics_export
from service.observability.logging_setup import configure_logging
from service.settings import Settings, SettingsError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m service", description="Signals administration.")
    sub = parser.add_subparsers(dest="command", required=True)
    keys.register(sub)
    data.register(sub)
    worker.register(sub)
    precompute.register(sub)
    lander.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    needs_secret = getattr(args, "needs_secret", False)  # the commands that hash user ids or draw noise
    if needs_secret is True or (callable(needs_secret) and needs_secret(settings)):
        try:
            settings.require_secret()
        except SettingsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    configure_logging("warning")
    if args.command in ("worker", "precompute", "data", "lander"):  # their metrics join the web process's (gunicorn.conf.py)
        metrics_export.use_directory(settings.run_dir / "metrics")
    try:
        return args.func(args, settings)
    finally:
        if args.command in ("worker", "precompute", "data", "lander"):
            metrics_export.forget(os.getpid())


if __name__ == "__main__":
    sys.exit(main())
