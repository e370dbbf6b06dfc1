"""`python -m service keys ...`: create, list and revoke, through the same parser the CLI builds."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.accounts import AccountStore, AuthFailure, Principal, hash_key, looks_like_key
from service.api.tiers import Tier
from service.cli import keys as keys_cli
from service.clock import FixedClock
from service.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data")


@pytest.fixture
def account_store(settings: Settings) -> Iterator[AccountStore]:
    """The database the CLI writes, opened as the service would open it."""
    store = AccountStore(settings.accounts_url)
    yield store
    store.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m service")
    sub = parser.add_subparsers(dest="command", required=True)
    keys_cli.register(sub)
    return parser


def run(argv: list[str], settings: Settings, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `python -m service <argv>`."""
    try:
        args = build_parser().parse_args(argv)
        code = args.func(args, settings)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def create(settings: Settings, capsys: pytest.CaptureFixture[str], *options: str) -> str:
    code, out, err = run(["keys", "create", *options], settings, capsys)
    assert (code, err) == (0, "")
    return out.splitlines()[-1]


def test_create_prints_the_key_last_and_it_authenticates_with_the_tier_asked(
    settings: Settings, account_store: AccountStore, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["keys", "create", "--tier", "professional"], settings, capsys)

    assert (code, err) == (0, "")
    *human, key = out.splitlines()
    assert looks_like_key(key)
    assert key not in "\n".join(human)
    assert "shown only once" in out and "Professional" in out
    principal = account_store.authenticate(key)
    assert isinstance(principal, Principal) and principal.tier is Tier.PROFESSIONAL


def test_create_accepts_the_tier_in_any_case(
    settings: Settings, account_store: AccountStore, capsys: pytest.CaptureFixture[str]
) -> None:
    key = create(settings, capsys, "--tier", "Analyst")
    principal = account_store.authenticate(key)
    assert isinstance(principal, Principal) and principal.tier is Tier.ANALYST


def test_create_joins_a_named_subscription(
    settings: Settings, account_store: AccountStore, capsys: pytest.CaptureFixture[str]
) -> None:
    first = create(settings, capsys, "--tier", "analyst", "--subscription", "acme")
    second = create(settings, capsys, "--tier", "analyst", "--subscription", "acme")

    principals = [account_store.authenticate(key) for key in (first, second)]
    assert all(isinstance(p, Principal) and p.subscription_name == "acme" for p in principals)


def test_create_with_another_tier_than_the_subscription_fails_clearly(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    create(settings, capsys, "--tier", "analyst", "--subscription", "acme")
    code, out, err = run(["keys", "create", "--tier", "observer", "--subscription", "acme"], settings, capsys)
    assert (code, out) == (1, "")
    assert "'acme' is on the Analyst tier" in err


def test_create_with_expiry(
    settings: Settings, account_store: AccountStore, capsys: pytest.CaptureFixture[str]
) -> None:
    key = create(settings, capsys, "--tier", "observer", "--expires-in-days", "30")

    (info,) = account_store.list_keys()
    assert info.expires_at is not None
    assert dt.timedelta(days=30) - dt.timedelta(minutes=1) < info.expires_at - info.created_at <= dt.timedelta(days=30)
    later = AccountStore(settings.accounts_url, clock=FixedClock(info.expires_at))
    assert later.authenticate(key) is AuthFailure.EXPIRED
    later.close()


@pytest.mark.parametrize("days", ["0", "-3", "soon"])
def test_create_refuses_a_bad_expiry(settings: Settings, capsys: pytest.CaptureFixture[str], days: str) -> None:
    code, out, err = run(["keys", "create", "--tier", "observer", "--expires-in-days", days], settings, capsys)
    assert (code, out) == (2, "")
    assert "--expires-in-days" in err


def test_bad_tier_is_a_usage_error_listing_the_choices(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["keys", "create", "--tier", "gold"], settings, capsys)

    assert (code, out) == (2, "")
    assert "invalid choice: 'gold'" in err
    for tier in Tier:
        assert tier.slug in err
    assert not Path(settings.accounts_url.removeprefix("sqlite:///")).exists()


def test_list_shows_every_key_and_no_secret(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    active = create(settings, capsys, "--tier", "analyst", "--subscription", "acme")
    revoked = create(settings, capsys, "--tier", "professional", "--subscription", "globex")
    run(["keys", "revoke", revoked], settings, capsys)

    code, out, err = run(["keys", "list"], settings, capsys)

    assert (code, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.split() == ["PREFIX", "SUBSCRIPTION", "TIER", "CREATED", "EXPIRES", "STATUS"]
    assert [row.split()[:3] + row.split()[-2:] for row in rows] == [
        [active[:16], "acme", "analyst", "never", "active"],
        [revoked[:16], "globex", "professional", "never", "revoked"],
    ]
    for key in (active, revoked):
        assert key[16:] not in out and hash_key(key) not in out


def test_list_when_empty_says_how_to_create_a_key(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["keys", "list"], settings, capsys)
    assert code == 0 and "keys create --tier" in out


def test_revoke_by_prefix(settings: Settings, account_store: AccountStore, capsys: pytest.CaptureFixture[str]) -> None:
    key = create(settings, capsys, "--tier", "analyst")

    code, out, err = run(["keys", "revoke", key[:16]], settings, capsys)

    assert (code, err) == (0, "")
    assert out.startswith(key[:16]) and " revoked at " in out
    assert account_store.authenticate(key) is AuthFailure.REVOKED

    code, out, _ = run(["keys", "revoke", key], settings, capsys)
    assert code == 0 and "already revoked" in out


@pytest.mark.parametrize("text", ["sig_live_Zz99", "not-a-key"])
def test_revoke_unknown_fails_with_a_message(settings: Settings, capsys: pytest.CaptureFixture[str], text: str) -> None:
    create(settings, capsys, "--tier", "analyst")

    code, out, err = run(["keys", "revoke", text], settings, capsys)

    assert (code, out) == (1, "")
    assert err.startswith("error: ") and text in err


def test_an_unreachable_database_is_an_error_without_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(accounts_url="postgresql+psycopg://signals:hunter2@127.0.0.1:1/accounts?connect_timeout=2")

    code, out, err = run(["keys", "list"], settings, capsys)

    assert (code, out) == (1, "")
    assert "cannot open the accounts database" in err
    assert "hunter2" not in err and "***" in err



def test_an_unknown_dialect_is_an_error_without_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    # An SQLAlchemyError that is not the driver's (no `orig`): once a traceback (found by mypy).
    settings = Settings(accounts_url="nosuchdialect://signals:hunter2@127.0.0.1/accounts")

    code, out, err = run(["keys", "list"], settings, capsys)

    assert (code, out) == (1, "")
    assert "cannot open the accounts database" in err and "nosuchdialect" in err
    assert "hunter2" not in err
