"""`python -m service keys create|list|revoke`: issue, list and revoke API keys."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from service.api.tiers import Tier
from service.settings import Settings

# The accounts store (SQLAlchemy) is imported where used: `python -m service data ...` need not load it.
if TYPE_CHECKING:
    from service.accounts import AccountStore, KeyInfo


def register(subparsers: Any) -> None:
    """Add the ``keys`` command to the parser's subparsers (from ``add_subparsers``)."""
    keys_parser = subparsers.add_parser(
        "keys",
        help="issue, list and revoke API keys",
        description="Issue, list and revoke API keys in the accounts database (SIGNALS_ACCOUNTS_URL).",
    )
    commands = keys_parser.add_subparsers(dest="keys_command", required=True, metavar="{create,list,revoke}")

    create = commands.add_parser(
        "create",
        help="issue a new key (printed once, on the last line)",
        description="Issue a new API key. The key is printed once, as the last line of output.",
    )
    create.add_argument(
        "--tier",
        type=str.lower,
        choices=[tier.slug for tier in Tier],
        help="the subscription's plan (required, except with --ingest)",
    )
    create.add_argument(
        "--ingest",
        action="store_true",
        help="an ingest key: it may post events to the collector (POST /api/v1/events) and read nothing",
    )
    create.add_argument("--name", metavar="NAME", help="with --ingest: a name for the key (who sends with it)")
    create.add_argument(
        "--subscription",
        metavar="NAME",
        help="add the key to this subscription (created if new); default: a new subscription with a generated name",
    )
    create.add_argument("--expires-in-days", metavar="N", type=_positive_int, help="the key stops working after N days")
    create.set_defaults(func=create_key)

    listing = commands.add_parser("list", help="list every key (never the keys themselves)")
    listing.set_defaults(func=list_keys)

    revoke = commands.add_parser("revoke", help="revoke a key, given in full or by its prefix")
    revoke.add_argument(
        "key_or_prefix", metavar="KEY_OR_PREFIX", help="the full key, or its prefix as `keys list` shows it"
    )
    revoke.set_defaults(func=revoke_key)


def create_key(args: argparse.Namespace, settings: Settings) -> int:
    if args.ingest:
        return create_ingest_key(args, settings)
    if args.tier is None:
        print("error: --tier is required (or --ingest for an ingest key)", file=sys.stderr)
        return 2
    if args.name is not None:
        print("error: --name is for ingest keys (--ingest); a subscription key takes --subscription", file=sys.stderr)
        return 2
    tier = Tier.parse(args.tier)
    with _open_store(settings) as store:
        if store is None:
            return 1
        expires_at = None
        if args.expires_in_days is not None:
            expires_at = store.clock.now() + dt.timedelta(days=args.expires_in_days)
        try:
            key, info = store.create_key(tier, args.subscription, expires_at)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    expiry = f"expires {_when(info.expires_at)}" if info.expires_at else "does not expire"
    print(
        f"Created a key for subscription {info.subscription_name!r} "
        f"({tier.label} tier, {tier.requests_per_minute} requests per minute); it {expiry}."
    )
    print("Store it now: it is shown only once and cannot be recovered (only its hash is kept).")
    print(key)
    return 0


def create_ingest_key(args: argparse.Namespace, settings: Settings) -> int:
    if args.tier is not None or args.subscription is not None or args.expires_in_days is not None:
        print("error: an ingest key has no plan, subscription or expiry (--ingest takes only --name)",
              file=sys.stderr)
        return 2
    with _open_store(settings) as store:
        if store is None:
            return 1
        try:
            key, info = store.create_ingest_key(args.name)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    print(f"Created an ingest key {info.name!r}: it may post events to the collector "
          f"(POST /api/v1/events on port {settings.collector_port}) and read nothing.")
    print("Store it now: it is shown only once and cannot be recovered (only its hash is kept).")
    print(key)
    return 0


def list_keys(args: argparse.Namespace, settings: Settings) -> int:
    with _open_store(settings) as store:
        if store is None:
            return 1
        infos = store.list_keys()
        ingest = store.list_ingest_keys()
        now = store.clock.now()
    if not infos and not ingest:
        print("No API keys yet. Issue one with: python -m service keys create --tier observer")
        return 0
    header = ("PREFIX", "SUBSCRIPTION", "TIER", "CREATED", "EXPIRES", "STATUS")
    rows = [header] + [_row(info, now) for info in infos] + [
        (i.prefix, i.name, "ingest", _when(i.created_at), "never", "revoked" if i.revoked_at else "active")
        for i in ingest]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0


def revoke_key(args: argparse.Namespace, settings: Settings) -> int:
    with _open_store(settings) as store:
        if store is None:
            return 1
        from service.accounts import AccountError

        before = store.clock.now()
        if args.key_or_prefix.strip().startswith("sig_ingest_"):
            try:
                ingest = store.revoke_ingest_key(args.key_or_prefix)
            except AccountError as error:
                print(f"error: {error.args[0]}", file=sys.stderr)
                return 1
            assert ingest.revoked_at is not None
            verb = "was already revoked" if ingest.revoked_at < before else "revoked"
            print(f"{ingest.prefix} (ingest key {ingest.name!r}) {verb} at {_when(ingest.revoked_at)}; "
                  "posts with this key are refused.")
            return 0
        try:
            info = store.revoke(args.key_or_prefix)
        except AccountError as error:
            print(f"error: {error.args[0]}", file=sys.stderr)
            return 1
    revoked_at = info.revoked_at
    assert revoked_at is not None, "revoke() returns the key as revoked"
    # revoke() keeps the first revocation time, so an earlier time means nothing changed now.
    verb = "was already revoked" if revoked_at < before else "revoked"
    print(
        f"{info.prefix} (subscription {info.subscription_name!r}, {info.tier.label} tier) {verb} "
        f"at {_when(revoked_at)}; requests with this key are refused."
    )
    return 0


@contextlib.contextmanager
def _open_store(settings: Settings) -> Iterator[AccountStore | None]:
    """The store for the settings' accounts URL, or None after printing why it cannot be opened."""
    import sqlalchemy as sa
    from sqlalchemy import exc

    from service.accounts import AccountStore

    try:
        store = AccountStore(settings.accounts_url)
    except exc.SQLAlchemyError as error:
        # Never print a password that the URL may carry.
        shown = sa.make_url(settings.accounts_url).render_as_string(hide_password=True)
        # The driver's own error when there is one (a DBAPIError's); an unknown dialect has none.
        reason = error.orig if isinstance(error, exc.DBAPIError) and error.orig is not None else error
        print(f"error: cannot open the accounts database {shown}: {reason}", file=sys.stderr)
        yield None
        return
    try:
        yield store
    finally:
        store.close()


def _row(info: KeyInfo, now: dt.datetime) -> tuple[str, ...]:
    return (
        info.prefix,
        info.subscription_name,
        info.tier.slug,
        _when(info.created_at),
        _when(info.expires_at) if info.expires_at else "never",
        info.status(now),
    )


def _when(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of days, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 day, got {value}")
    return value
