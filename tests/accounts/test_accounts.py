"""Accounts store: keys, authentication and revocation, on SQLite and on the real PostgreSQL.

PostgreSQL tests run in a throwaway database created for the test session. When the server
cannot be reached they fail, unless SIGNALS_TEST_SKIP_POSTGRES=1 asks to skip them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from service.accounts import (
    AccountError,
    AccountStore,
    AmbiguousPrefix,
    AuthFailure,
    KeyInfo,
    KeyNotFound,
    Principal,
    display_prefix,
    generate_key,
    hash_key,
    looks_like_key,
    make_engine,
)
from service.accounts import keys as keys_module
from service.accounts.tables import metadata
from service.api.tiers import Tier
from service.clock import FixedClock

START = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def store(accounts_url: str, clock: FixedClock) -> Iterator[AccountStore]:
    accounts = AccountStore(accounts_url, clock=clock)
    yield accounts
    accounts.close()


def all_stored_values(store: AccountStore) -> list[str]:
    """Every value of every row of every accounts table, as text."""
    values = []
    with store.db_engine.connect() as connection:
        for table in metadata.sorted_tables:
            for row in connection.execute(sa.select(table)):
                values.extend(str(value) for value in row)
    return values


# -- the key format ------------------------------------------------------------------------


def test_generated_keys_have_the_documented_format() -> None:
    generated = {generate_key() for _ in range(200)}
    assert len(generated) == 200
    for key in generated:
        assert key.startswith("sig_live_") and len(key) == 49
        assert looks_like_key(key)
        assert display_prefix(key) == key[:16]
    # 200 keys x 40 characters draw on (practically) the whole base62 alphabet.
    used = set("".join(key[9:] for key in generated))
    assert used <= set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    assert len(used) >= 60


def test_hash_is_sha256_hex() -> None:
    key = generate_key()
    assert hash_key(key) == hashlib.sha256(key.encode()).hexdigest()


def malformed_variants(key: str) -> list[str]:
    return [
        key[:-1],
        key + "A",
        " " + key,
        key + "\n",
        "Bearer " + key,
        key.replace("sig_live_", "sig_test_"),
        key.replace("sig_live_", "SIG_LIVE_"),
        key[:20] + "-" + key[21:],
        key[:20] + "\u0663" + key[21:],  # ARABIC-INDIC DIGIT THREE: a digit, but not ASCII
        key[:20] + "\u00e9" + key[21:],
        "sig_live_",
        "x" * 10_000,
    ]


def test_looks_like_key_is_exact() -> None:
    key = generate_key()
    assert looks_like_key(key)
    for variant in malformed_variants(key):
        assert not looks_like_key(variant), variant


# -- issuing and authenticating ------------------------------------------------------------


@pytest.mark.parametrize("tier", list(Tier))
def test_created_key_authenticates_as_its_subscription(store: AccountStore, tier: Tier) -> None:
    key, info = store.create_key(tier, "acme")

    assert looks_like_key(key)
    assert info == KeyInfo(display_prefix(key), "acme", tier, START, None, None)
    principal = store.authenticate(key)
    assert isinstance(principal, Principal)
    assert (principal.subscription_name, principal.tier, principal.key_prefix) == ("acme", tier, info.prefix)
    assert isinstance(principal.subscription_id, int)


def test_times_come_back_as_aware_utc(store: AccountStore) -> None:
    paris_evening = dt.datetime(2025, 3, 2, 21, 30, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    store.create_key(Tier.OBSERVER, expires_at=paris_evening)

    (listed,) = store.list_keys()
    assert listed.created_at == START and listed.created_at.tzinfo == dt.UTC
    assert listed.expires_at == paris_evening and listed.expires_at.tzinfo == dt.UTC
    assert listed.expires_at.hour == 20


def test_keys_are_stored_only_as_hashes(store: AccountStore, accounts_url: str) -> None:
    key, _ = store.create_key(Tier.ANALYST, "acme")
    secret_part = key[len("sig_live_") :]

    stored = all_stored_values(store)
    assert hash_key(key) in stored
    assert not [value for value in stored if secret_part[:20] in value or secret_part[-20:] in value]
    if accounts_url.startswith("sqlite"):
        # The file and its write-ahead log, byte for byte: no copy of the secret anywhere.
        database = Path(sa.make_url(accounts_url).database or "")
        for path in (database, Path(f"{database}-wal")):
            if path.exists():
                assert secret_part[:20].encode() not in path.read_bytes()


def test_malformed_keys_never_reach_the_database(store: AccountStore) -> None:
    key, _ = store.create_key(Tier.ANALYST)
    statements: list[str] = []
    sa.event.listen(store.db_engine, "before_cursor_execute", lambda *args: statements.append(args[2]))

    assert store.authenticate(None) is AuthFailure.MISSING
    assert store.authenticate("") is AuthFailure.MISSING
    for variant in malformed_variants(key):
        assert store.authenticate(variant) is AuthFailure.MALFORMED, variant
    assert statements == []

    # The listener does see queries: a well-formed key is looked up.
    assert store.authenticate(generate_key()) is AuthFailure.UNKNOWN
    assert len(statements) == 1 and "key_hash" in statements[0]


def test_unknown_key_is_refused(store: AccountStore) -> None:
    store.create_key(Tier.PROFESSIONAL)
    assert store.authenticate(generate_key()) is AuthFailure.UNKNOWN


def test_revoked_key_is_refused_and_its_sibling_still_works(store: AccountStore, clock: FixedClock) -> None:
    revoked_key, _ = store.create_key(Tier.ANALYST, "acme")
    sibling_key, _ = store.create_key(Tier.ANALYST, "acme")
    clock.advance(dt.timedelta(minutes=5))

    info = store.revoke(revoked_key)

    assert info.revoked_at == START + dt.timedelta(minutes=5)
    assert info.status(clock.now()) == "revoked"
    assert store.authenticate(revoked_key) is AuthFailure.REVOKED
    assert isinstance(store.authenticate(sibling_key), Principal)


def test_key_expires_at_its_expiry_time(store: AccountStore, clock: FixedClock) -> None:
    key, info = store.create_key(Tier.OBSERVER, expires_at=START + dt.timedelta(hours=1))

    clock.advance(dt.timedelta(minutes=59, seconds=59))
    assert isinstance(store.authenticate(key), Principal)
    assert info.status(clock.now()) == "active"
    clock.advance(dt.timedelta(seconds=1))
    assert store.authenticate(key) is AuthFailure.EXPIRED
    assert info.status(clock.now()) == "expired"


def test_revocation_wins_over_expiry(store: AccountStore, clock: FixedClock) -> None:
    key, _ = store.create_key(Tier.OBSERVER, expires_at=START + dt.timedelta(hours=1))
    store.revoke(key)
    clock.advance(dt.timedelta(hours=2))
    assert store.authenticate(key) is AuthFailure.REVOKED


def test_many_keys_are_judged_in_one_query(store: AccountStore, clock: FixedClock) -> None:
    """authenticate_digests: each hash gets what its key is worth now, as authenticate says."""
    good, _ = store.create_key(Tier.PROFESSIONAL, "batch")
    other, _ = store.create_key(Tier.OBSERVER)
    revoked, _ = store.create_key(Tier.PROFESSIONAL, "batch")
    store.revoke(revoked)
    expiring, _ = store.create_key(Tier.ANALYST, expires_at=START + dt.timedelta(minutes=1))
    clock.advance(dt.timedelta(minutes=2))
    unknown = generate_key()
    digests = {name: hash_key(key) for name, key in
               {"good": good, "other": other, "revoked": revoked, "expiring": expiring, "unknown": unknown}.items()}

    statements: list[str] = []

    def record(connection, cursor, statement, *rest) -> None:
        statements.append(statement)

    sa.event.listen(store.db_engine, "before_cursor_execute", record)
    outcomes = store.authenticate_digests(list(digests.values()) + [digests["good"]])  # a repeat is harmless
    sa.event.remove(store.db_engine, "before_cursor_execute", record)

    assert len([s for s in statements if "api_keys" in s]) == 1
    assert set(outcomes) == set(digests.values())
    assert outcomes[digests["good"]].tier is Tier.PROFESSIONAL
    assert outcomes[digests["good"]].subscription_name == "batch"
    assert outcomes[digests["other"]].tier is Tier.OBSERVER
    assert outcomes[digests["revoked"]] is AuthFailure.REVOKED
    assert outcomes[digests["expiring"]] is AuthFailure.EXPIRED
    assert outcomes[digests["unknown"]] is AuthFailure.UNKNOWN
    assert store.authenticate_digests([]) == {}
    for key in (good, other, revoked, expiring, unknown):  # the one-key path agrees
        assert store.authenticate(key) == outcomes[hash_key(key)]


def test_create_refuses_bad_expiry_and_names(store: AccountStore) -> None:
    with pytest.raises(ValueError, match="not in the future"):
        store.create_key(Tier.OBSERVER, expires_at=START)
    with pytest.raises(ValueError, match="aware"):
        store.create_key(Tier.OBSERVER, expires_at=dt.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="empty"):
        store.create_key(Tier.OBSERVER, "   ")
    with pytest.raises(ValueError, match="control"):
        store.create_key(Tier.OBSERVER, "acme\nlabs")
    with pytest.raises(ValueError, match="longer"):
        store.create_key(Tier.OBSERVER, "a" * 101)
    assert store.list_keys() == []


# -- subscriptions ---------------------------------------------------------------------------


def test_two_keys_share_a_subscription(store: AccountStore) -> None:
    first_key, _ = store.create_key(Tier.ANALYST, "acme")
    second_key, _ = store.create_key(Tier.ANALYST, " acme ")

    first, second = store.authenticate(first_key), store.authenticate(second_key)
    assert isinstance(first, Principal) and isinstance(second, Principal)
    assert first_key != second_key
    assert first.subscription_id == second.subscription_id
    assert first.key_prefix != second.key_prefix
    assert [info.subscription_name for info in store.list_keys()] == ["acme", "acme"]


def test_keys_without_a_name_get_their_own_readable_subscription(store: AccountStore) -> None:
    _, first = store.create_key(Tier.OBSERVER)
    _, second = store.create_key(Tier.OBSERVER)
    assert first.subscription_name != second.subscription_name
    for name in (first.subscription_name, second.subscription_name):
        assert re.fullmatch(r"sub-[a-z2-9]{8}", name), name


def test_a_key_cannot_join_a_subscription_on_another_tier(store: AccountStore) -> None:
    store.create_key(Tier.ANALYST, "acme")
    with pytest.raises(ValueError, match=r"'acme' is on the Analyst tier, not Professional"):
        store.create_key(Tier.PROFESSIONAL, "acme")
    assert len(store.list_keys()) == 1


# -- revoking and listing --------------------------------------------------------------------


def test_revoke_by_prefix(store: AccountStore, clock: FixedClock) -> None:
    key, info = store.create_key(Tier.ANALYST, "acme")
    other_key, _ = store.create_key(Tier.ANALYST, "acme")

    revoked = store.revoke(info.prefix[:13])

    assert revoked.prefix == info.prefix and revoked.revoked_at == START
    assert store.authenticate(key) is AuthFailure.REVOKED
    assert isinstance(store.authenticate(other_key), Principal)


def test_revoking_twice_keeps_the_first_revocation_time(store: AccountStore, clock: FixedClock) -> None:
    key, info = store.create_key(Tier.ANALYST)
    store.revoke(key)
    clock.advance(dt.timedelta(days=1))
    again = store.revoke(info.prefix)
    assert again.revoked_at == START
    assert store.authenticate(key) is AuthFailure.REVOKED


def test_ambiguous_prefix_revokes_nothing(store: AccountStore, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = "sig_live_Abcd"
    made = iter([shared + "X" * 36, shared + "Y" * 36])
    monkeypatch.setattr(keys_module, "generate_key", lambda: next(made))
    first_key, _ = store.create_key(Tier.ANALYST)
    second_key, _ = store.create_key(Tier.ANALYST)

    with pytest.raises(AmbiguousPrefix, match="several API keys"):
        store.revoke(shared)
    assert isinstance(store.authenticate(first_key), Principal)
    assert isinstance(store.authenticate(second_key), Principal)

    # Prefixes compare case-sensitively, as base62 does (SQLite's LIKE would not).
    with pytest.raises(KeyNotFound):
        store.revoke("sig_live_abcd")
    store.revoke(shared + "Y")
    assert isinstance(store.authenticate(first_key), Principal)
    assert store.authenticate(second_key) is AuthFailure.REVOKED


@pytest.mark.parametrize(
    "text",
    [generate_key(), "sig_live_Zz99", "sig_live_", "sig_live_Zz", "acme"],
    ids=["unknown key", "unknown prefix", "bare prefix", "too short", "not a key"],
)
def test_revoke_not_found(store: AccountStore, text: str) -> None:
    key, _ = store.create_key(Tier.ANALYST)
    with pytest.raises(KeyNotFound) as caught:
        store.revoke(text)
    assert isinstance(caught.value, AccountError) and isinstance(caught.value, LookupError)
    assert isinstance(store.authenticate(key), Principal)


def test_not_found_message_does_not_echo_a_whole_key(store: AccountStore) -> None:
    typo = generate_key() + "Q"
    with pytest.raises(KeyNotFound) as caught:
        store.revoke(typo)
    assert typo[16:] not in str(caught.value)


def test_list_keys_holds_no_secrets(store: AccountStore) -> None:
    key, _ = store.create_key(Tier.ANALYST, "acme")
    store.create_key(Tier.PROFESSIONAL, "globex", expires_at=START + dt.timedelta(days=30))

    listed = store.list_keys()

    assert [field.name for field in dataclasses.fields(KeyInfo)] == [
        "prefix",
        "subscription_name",
        "tier",
        "created_at",
        "expires_at",
        "revoked_at",
    ]
    assert [(info.subscription_name, info.tier) for info in listed] == [
        ("acme", Tier.ANALYST),
        ("globex", Tier.PROFESSIONAL),
    ]
    text = repr(listed)
    assert key[16:] not in text and hash_key(key) not in text


# -- operations ----------------------------------------------------------------------------


def test_ping_answers_true_when_the_database_answers(store: AccountStore) -> None:
    assert store.ping() is True


def test_ping_answers_false_when_the_database_is_gone(tmp_path: Path) -> None:
    accounts = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}")
    accounts.close()
    # Swap in an engine for a server that is not there, as after a database outage.
    accounts.db_engine = sa.create_engine(
        "postgresql+psycopg://postgres@127.0.0.1:1/none", connect_args={"connect_timeout": 1}
    )
    assert accounts.ping() is False
    accounts.close()


def test_sqlite_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    accounts = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}")
    with accounts.db_engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 1000
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    accounts.close()


def test_in_memory_sqlite_keeps_one_database_across_threads() -> None:
    accounts = AccountStore("sqlite://")
    key, _ = accounts.create_key(Tier.OBSERVER)
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(accounts.authenticate(key)))
    thread.start()
    thread.join()
    assert isinstance(results[0], Principal)
    accounts.close()


def start_workers_together(url: str, workers: int) -> list[BaseException]:
    """Construct `workers` stores on url at the same moment, as gunicorn workers do; their errors."""
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []
    stores: list[AccountStore] = []

    def start_worker() -> None:
        barrier.wait()
        try:
            stores.append(AccountStore(url))
        except BaseException as error:  # collected: an exception in a thread would be lost
            errors.append(error)

    threads = [threading.Thread(target=start_worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for accounts in stores:
        accounts.close()
    return errors


def test_workers_starting_together_create_the_schema_once(accounts_url: str) -> None:
    # A few rounds on an empty database: one round alone can miss the race.
    for _ in range(3):
        engine = make_engine(accounts_url)
        metadata.drop_all(engine)
        engine.dispose()
        assert start_workers_together(accounts_url, workers=4) == []

    accounts = AccountStore(accounts_url)
    key, _ = accounts.create_key(Tier.ANALYST)
    assert isinstance(accounts.authenticate(key), Principal)
    accounts.close()
