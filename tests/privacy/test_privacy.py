"""The privacy stage without HTTP: noise distribution and determinism, secrets, suppression at
the threshold, non-negativity, and canonical cell descriptions."""

from __future__ import annotations

import datetime as dt
import math
import statistics

import polars as pl
import pytest

from service.api.windows import TimeRange
from service.privacy import Privacy, PrivacyParams, Published
from tests.support.privacy_stage import AS_OF, CELL, WEEK, context, publish


def cells(n: int, suppressions: int = 10_000, events: int = 10_000, users: int = 100) -> pl.DataFrame:
    return pl.DataFrame({
        "keyword": [f"kw{i}" for i in range(n)],
        "suppressions": [suppressions] * n, "events": [events] * n, "unique_users": [users] * n,
    })


def test_users_noise_has_mean_zero_and_the_configured_variance():
    params = PrivacyParams(min_users=0)
    frame = cells(20_000, suppressions=200, events=200, users=20)
    noise = (publish(Privacy("s3cret", params), frame, context())["unique_users"] - frame["unique_users"]).to_list()
    alpha = params.alpha("unique_users")
    expected_variance = 2 * alpha / (1 - alpha) ** 2
    std = math.sqrt(expected_variance)
    assert abs(statistics.fmean(noise)) < 4 * std / math.sqrt(len(noise))  # mean 0, within 4 standard errors
    assert statistics.pvariance(noise) == pytest.approx(expected_variance, rel=0.06)
    assert all(isinstance(value, int) for value in noise)
    assert params.noise_std("unique_users") == pytest.approx(std)


@pytest.mark.parametrize("measure", ["suppressions", "events"])
def test_summed_noise_has_mean_zero_and_the_variance_of_each_cells_cap(measure):
    """Each cell's noise is scaled to its own cap: divided by the reported standard deviation,
    the noise has mean 0 and variance 1."""
    frame = cells(5_000, suppressions=12_000, events=6_000, users=100)  # 120 and 60 a user
    published = publish(Privacy("s3cret"), frame, context(), noise_std=True)
    standardised = ((published[measure] - frame[measure]) / published[f"{measure}_std"]).to_list()
    assert abs(statistics.fmean(standardised)) < 4 / math.sqrt(len(standardised))
    assert statistics.pvariance(standardised) == pytest.approx(1.0, rel=0.08)
    # The caps vary with the pilot's noise but stay near 8 x the (pilot-capped) mean per user.
    caps = published[f"{measure}_std"].to_list()
    assert min(caps) > 0 and max(caps) < 10 * PrivacyParams().noise_std(measure, cap=8 * 32)


def test_noise_scale_follows_epsilon_and_cap():
    loose, tight = PrivacyParams(epsilon_suppressions=2.0), PrivacyParams(epsilon_suppressions=0.5)
    default = PrivacyParams()
    assert loose.noise_std("suppressions", 100) < default.noise_std("suppressions", 100) < tight.noise_std("suppressions", 100)
    assert default.noise_std("suppressions", 10) < default.noise_std("suppressions", 100)
    # The sum keeps what the pilot did not spend: epsilon x (1 - pilot_share).
    assert default.alpha("suppressions", 100) == pytest.approx(math.exp(-0.8 / 100))


def test_same_cell_same_noise_and_different_secret_different_noise():
    frame = cells(500)
    first = publish(Privacy("s3cret"), frame, context())
    assert first.equals(publish(Privacy("s3cret"), frame, context()))
    assert first.equals(publish(Privacy("s3cret"), frame.reverse(), context()).reverse())  # row order is no input
    other = publish(Privacy("another secret"), frame, context())
    assert (first["suppressions"] != other["suppressions"]).sum() > 450


def test_noise_depends_on_every_part_of_the_cell():
    frame = cells(300)
    base = publish(Privacy("s"), frame, context())["suppressions"]
    variants = [
        context(time_range=TimeRange(WEEK.start + dt.timedelta(hours=1), WEEK.end)),
        context(table="keyword_changes"),
        context(fixed={"platform": ("chrome",)}),
        context(versions={(AS_OF - dt.timedelta(days=2)).date(): 5}),  # new data for a date of the range
    ]
    for variant in variants:
        assert (publish(Privacy("s"), frame, variant)["suppressions"] != base).sum() > 250, variant


def test_noise_ignores_data_changes_outside_the_cells_range():
    frame = cells(300)
    base = publish(Privacy("s"), frame, context())["suppressions"]
    elsewhere = context(versions={(WEEK.start - dt.timedelta(days=1)).date(): 9,
                                  (WEEK.end + dt.timedelta(days=1)).date(): 9})
    assert publish(Privacy("s"), frame, elsewhere)["suppressions"].equals(base)


def test_a_finished_bucket_keeps_its_noise_as_hours_pass():
    """The same day bucket seen from windows ending at different hours: the same cell, the same
    noise (as_of is not part of a cell), so waiting for the next hour cannot average it away."""
    day = dt.datetime(2026, 3, 5, tzinfo=dt.UTC)
    frame = cells(50).with_columns(pl.lit(day).dt.cast_time_unit("us").alias("ts"))
    seen = set()
    for hours_later in range(0, 36, 5):  # the window starts before the bucket all along
        end = AS_OF + dt.timedelta(hours=hours_later)
        window = TimeRange(end - dt.timedelta(days=7), end)
        published = publish(Privacy("s"), frame, context(dims=("keyword", "ts"), bucket="day", time_range=window))
        seen.add(tuple(published["suppressions"]))
    assert len(seen) == 1


def test_data_version_is_the_last_generation_of_the_ranges_dates():
    from service.privacy import data_version

    versions = {dt.date(2026, 3, 1): 3, dt.date(2026, 3, 2): 7, dt.date(2026, 3, 4): 5}
    at = lambda d, h=0: dt.datetime(2026, 3, d, h, tzinfo=dt.UTC)  # noqa: E731
    assert data_version(versions, at(1), at(2)) == 3            # end is exclusive
    assert data_version(versions, at(1), at(2, 1)) == 7
    assert data_version(versions, at(3), at(4)) == 0
    assert data_version(versions, at(1), at(5)) == 7
    assert data_version({}, at(1), at(5)) == 0


def test_filters_and_grouped_values_describe_the_same_cell():
    """keyword X as a grouped value, or as a one-value filter with no grouping: one cell."""
    grouped = publish(Privacy("s"), cells(1).with_columns(pl.lit("elon musk").alias("keyword")), context())
    filtered = publish(Privacy("s"), cells(1).drop("keyword"),
                                    context(dims=(), fixed={"keyword": ("elon musk",)}))
    assert grouped["suppressions"].to_list() == filtered["suppressions"].to_list()
    # a filter's values are a set: order and repetition do not matter
    a = publish(Privacy("s"), cells(1), context(fixed={"platform": ("ios", "chrome")}))
    b = publish(Privacy("s"), cells(1), context(fixed={"platform": ("chrome", "ios", "chrome")}))
    assert a.equals(b)


def test_values_with_separator_characters_cannot_collide():
    frame = pl.DataFrame({"a": ["x|b=1:y", "x"], "b": ["z", "y|b=1:z"], "suppressions": [10_000] * 2,
                          "events": [10_000] * 2, "unique_users": [1000] * 2})
    published = publish(Privacy("s"), frame, context(dims=("a", "b")))
    assert published["suppressions"][0] != published["suppressions"][1]


def test_published_numbers_are_never_negative():
    zeros = cells(5000, suppressions=0, events=0, users=0)
    published = publish(Privacy("s", PrivacyParams(min_users=0)), zeros, context())
    for column in ("suppressions", "events", "unique_users"):
        assert published[column].min() >= 0 and published[column].dtype == pl.Int64


def test_suppression_at_the_threshold_uses_the_noisy_count():
    almost_exact = PrivacyParams(epsilon_users=1e6, min_users=10)  # users noise practically zero
    frame = pl.DataFrame({"keyword": ["nine", "ten"], "suppressions": [500, 500], "events": [50, 50],
                          "unique_users": [9, 10]})
    assert publish(Privacy("s", almost_exact), frame, context())["keyword"].to_list() == ["ten"]
    # With real noise, near the threshold the noisy count decides, in both directions.
    noisy = Privacy("s", PrivacyParams(min_users=10))
    frame = cells(4000, users=10)
    published = publish(noisy, frame, context(published=CELL))
    shown = published["unique_users"]
    assert 0 < published.height < 4000  # some true-10 cells fall below 10 after noise, some do not
    assert shown.min() >= 10


def test_zero_policy_keeps_rows_and_shows_zeros():
    frame = pl.DataFrame({"keyword": ["few", "many"], "suppressions": [40, 4000], "events": [4, 400],
                          "unique_users": [2, 200]})
    zero = tuple(Published(p.column, p.measure, p.users, when_suppressed="zero") for p in CELL)
    published = publish(Privacy("s"), frame, context(published=zero))
    assert published.height == 2
    assert published.row(0) == ("few", 0, 0, 0)
    assert published.row(1)[1] > 0


def test_exact_params_publish_true_values_and_settings_cannot_ask_for_them():
    from service.settings import Settings, SettingsError

    frame = cells(10, suppressions=7, events=3, users=1)
    assert publish(Privacy.exact(), frame, context()).select(frame.columns).equals(frame)
    with pytest.raises(SettingsError, match="EPSILON"):
        Settings.from_env({"SIGNALS_PRIVACY_EPSILON_USERS": "inf"})
    with pytest.raises(SettingsError, match="EPSILON"):
        Settings.from_env({"SIGNALS_PRIVACY_EPSILON_SUPPRESSIONS": "0"})
    with pytest.raises(SettingsError, match="MIN_USERS"):
        Settings.from_env({"SIGNALS_PRIVACY_MIN_USERS": "0"})


def test_production_refuses_to_start_without_a_secret():
    from service.settings import Settings, SettingsError

    with pytest.raises(SettingsError, match="SIGNALS_SECRET"):
        Settings.from_env({"SIGNALS_ENV": "production"})
    assert Settings.from_env({"SIGNALS_ENV": "production", "SIGNALS_SECRET": "x" * 32}).secret == "x" * 32


def test_no_secret_in_the_code_stands_in_for_a_missing_one(tmp_path):
    """Outside production the settings hold no secret when SIGNALS_SECRET is not set, and whatever
    uses one (the app, the noise) refuses, saying how to get one; the secret is never in the
    settings' repr."""
    from service.privacy import noise
    from service.settings import Settings, SettingsError

    unset = Settings.from_env({"SIGNALS_DATA_DIR": str(tmp_path)})
    assert unset.secret == ""
    with pytest.raises(SettingsError, match=r"SIGNALS_SECRET is not set.*\./scripts/run\.sh makes one"):
        unset.require_secret()
    (tmp_path / "secret").write_text("kept\n")  # the install's, made by run.sh: the message shows how to use it
    with pytest.raises(SettingsError, match=r'export SIGNALS_SECRET="\$\(cat .*/secret\)"'):
        unset.require_secret()
    with pytest.raises(ValueError, match="must not be empty"):
        Privacy("")
    with pytest.raises(ValueError, match="must not be empty"):
        noise.noise_key_fingerprint("")
    chosen = Settings.from_env({"SIGNALS_SECRET": "an install's own secret"})
    assert chosen.require_secret() == "an install's own secret"
    assert "an install's own secret" not in repr(chosen) and "an install's own secret" not in str(chosen)


# The noise derivation is part of what is published: a change to it changes every number once
# (and lets anyone average old and new answers). These pin it.


def test_the_uniforms_are_the_little_endian_words_of_each_cells_hmac_sha512():
    import hmac
    import struct

    from service.privacy import noise

    key = noise.noise_key("pinned secret")
    messages = [f"v3|suppressions|0|cell {i}|ü" for i in range(50)]
    words = struct.unpack(f"<{16 * 50}I", b"".join(hmac.digest(key, m.encode(), "sha512") for m in messages))
    drawn = noise.uniforms(key, messages)
    assert [series.to_list() for series in drawn] == [list(words[i::16]) for i in range(16)]
    assert all(series.dtype == pl.UInt32 for series in drawn)
    assert [series.len() for series in noise.uniforms(key, [])] == [0] * 16


@pytest.mark.parametrize("key_length", [0, 1, 32, 127, 128, 129, 300])
def test_the_uniforms_hmac_is_the_standard_one_for_any_key_length(key_length):
    """The uniforms compute HMAC-SHA512 from SHA-512 states (RFC 2104): the same bytes as the
    hmac module for keys shorter than, as long as, and longer than SHA-512's 128-byte block."""
    import hmac
    import struct

    from service.privacy import noise

    key = bytes((7 * i + 3) % 256 for i in range(key_length))
    messages = ["", "a", "v3|keyword_changes|ü|" * 40]
    words = struct.unpack(f"<{16 * 3}I", b"".join(hmac.digest(key, m.encode(), "sha512") for m in messages))
    assert [series.to_list() for series in noise.uniforms(key, messages)] == [list(words[i::16]) for i in range(16)]


def test_the_noise_of_known_cells_is_what_it_always_was():
    from service.privacy import noise
    from service.privacy.params import EVENTS, SUPPRESSIONS, UNIQUE_USERS

    key = noise.noise_key("pinned secret")
    messages = [f"v3|suppressions|0|2026-01-01T00:00:00Z/2026-01-02T00:00:00Z|keyword=1:2:k{i}" for i in range(8)]
    drawn = noise.Draws([(noise.uniforms(key, messages), pl.Series([1.0] * 8))])  # one time level
    params, true = PrivacyParams(), pl.Series([1000] * 8)
    # Values from the code of 2026-11-28 (issue 41: a rounded Laplace draw per time level, from the
    # same words as the two-sided geometric draw before it, which gave 994, 1000, 997, 1001, ...).
    assert noise.noisy(params, true, UNIQUE_USERS, drawn, alpha=0.8).to_list() == [
        994, 1000, 998, 1001, 1003, 1001, 995, 1000]
    assert noise.noisy(params, true, SUPPRESSIONS, drawn, cap=pl.Series([3, 10, 1, 50, 2, 7, 100, 4])).to_list() == [
        991, 1000, 998, 1044, 998, 994, 1042, 993]
    assert noise.noisy(params, true, EVENTS, drawn, alpha=0.95).to_list() == [
        997, 968, 1016, 1011, 1019, 1067, 1014, 991]


def test_the_time_levels_of_a_known_range_are_what_they_always_were():
    from service.privacy.cells import time_levels

    day = time_levels(dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 2, tzinfo=dt.UTC), 3, PrivacyParams())
    assert [(level, text) for level, _weight, text in day] == [
        (0, "3|2026-01-01T00:00:00Z/2026-01-02T00:00:00Z"), (3, "T3|61362/61365"), (4, "T4|30681/30682"),
        (5, "T5|15340/15341")]


def test_uniforms_take_each_word_when_first_read():
    from service.privacy import noise

    drawn = noise.uniforms(noise.noise_key("s"), ["a", "b", "c"])
    assert len(drawn) == 16 and drawn[3] is drawn[3] and drawn[-1].to_list() == drawn[15].to_list()
    assert [s.to_list() for s in drawn[14:]] == [drawn[14].to_list(), drawn[15].to_list()]
    with pytest.raises(IndexError):
        drawn[16]


def test_uniforms_are_the_same_words_on_a_big_endian_machine(monkeypatch):
    """Arrow reads the digests' words in the platform's byte order; elsewhere they are unpacked
    as little-endian explicitly. Both give the same draws."""
    from service.privacy import noise

    key, messages = noise.noise_key("s"), [f"cell {i}" for i in range(20)]
    native = [series.to_list() for series in noise.uniforms(key, messages)]
    monkeypatch.setattr(noise.sys, "byteorder", "big")
    assert [series.to_list() for series in noise.uniforms(key, messages)] == native
