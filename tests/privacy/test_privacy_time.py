"""A cell's noise over time (service/privacy/cells.py `time_levels`): a window moved by an hour keeps
most of its noise, so averaging shifted windows cannot remove it; its own part (level 0, half the
variance) keeps consecutive windows from differencing exactly; disjoint ranges share none."""

from __future__ import annotations

import datetime as dt
import math

import polars as pl
import pytest

from service.api.windows import TimeRange
from service.privacy import CellContext, Privacy, PrivacyParams, Published
from service.privacy.cells import cell_seeds, time_levels

END = dt.datetime(2026, 3, 10, 13, tzinfo=dt.UTC)
CELLS = 3000
PARAMS = PrivacyParams()
USERS = Published("users", "unique_users", "users")


def _window(hours: int, shift: int) -> TimeRange:
    end = END + dt.timedelta(hours=shift)
    return TimeRange(end - dt.timedelta(hours=hours), end)


def _errors(hours: int, shift: int, true: int = 100, versions=None) -> pl.Series:
    """Each of CELLS cells' published user count less its true one, for the window ending `shift`
    hours after END."""
    frame = pl.DataFrame({"keyword": [f"k{i}" for i in range(CELLS)], "users": [true] * CELLS})
    cell = CellContext(table="suppressions", dims=("keyword",), published=(USERS,), time_range=_window(hours, shift),
                       versions=versions or {})
    return Privacy("time-test").publish(frame, cell).get_column("users").cast(pl.Float64) - true


@pytest.mark.parametrize("hours", [1, 24, 7 * 24, 30 * 24, 90 * 24])
def test_the_weights_keep_each_cells_variance(hours):
    levels = time_levels(END - dt.timedelta(hours=hours), END, 0, PARAMS)
    assert sum(weight**2 for _level, weight, _text in levels) == pytest.approx(1.0)
    assert levels[0][1] == pytest.approx(math.sqrt(PARAMS.time_base_share))
    assert max(level for level, _w, _t in levels) == int(math.log2(PARAMS.time_span_blocks * hours))
    assert len(levels) == 1 + min(PARAMS.time_top_levels, int(math.log2(PARAMS.time_span_blocks * hours)))


def test_one_cell_has_the_variance_it_had():
    sd = _errors(30 * 24, 0).std()
    assert abs(sd - PARAMS.noise_std("unique_users")) < 0.1 * PARAMS.noise_std("unique_users")


@pytest.mark.parametrize("hours,floor", [(30 * 24, 0.5), (7 * 24, 0.5)])
def test_averaging_25_windows_moved_an_hour_at_a_time_removes_at_most_half_the_error(hours, floor):
    """Point 3 of issue 41: the mean of 25 windows each an hour later than the one before has an
    error of at least half one answer's (independent noise: a fifth)."""
    runs = [_errors(hours, shift) for shift in range(25)]
    mean = sum(runs) / len(runs)
    assert mean.std() >= floor * runs[0].std(), (mean.std(), runs[0].std())


def test_consecutive_windows_do_not_difference_exactly():
    """The difference of two windows an hour apart still carries noise: its own part (level 0) is
    drawn anew for each range, so over a day of consecutive pairs their differences' s.d. is at
    least 0.5 of one answer's noise and most differences are not 0."""
    runs = [_errors(30 * 24, shift) for shift in range(25)]
    differences = pl.concat([runs[i + 1] - runs[i] for i in range(24)])
    assert differences.std() >= 0.5 * runs[0].std()
    assert (differences == 0).mean() < 0.5


def test_disjoint_ranges_share_no_noise():
    """The buckets of a series (disjoint hours, days) draw independently: adjacent hours are
    uncorrelated."""
    for hours in (1, 24):
        first, second = _errors(hours, 0), _errors(hours, hours)
        assert abs(pl.DataFrame({"a": first, "b": second}).select(pl.corr("a", "b")).item()) < 0.06


def test_new_data_redraws_only_the_ranges_own_part():
    """A data load touching the range's dates changes its level 0 only: the answers around it differ
    by noise of the level's share (not exactly the new rows), and most of the noise stays."""
    before = _errors(30 * 24, 0)
    after = _errors(30 * 24, 0, versions={(END - dt.timedelta(days=1)).date(): 7})
    change = after - before
    assert 0.5 * math.sqrt(2 * PARAMS.time_base_share) < change.std() / before.std() < 1.5 * math.sqrt(2 * PARAMS.time_base_share)
    # The part kept (1 - time_base_share of the variance) makes them correlated.
    assert pl.DataFrame({"a": before, "b": after}).select(pl.corr("a", "b")).item() > 0.5 * (1 - PARAMS.time_base_share)


def test_a_day_bucket_and_the_24_hour_window_ending_at_its_midnight_are_one_cell():
    midnight = dt.datetime(2026, 3, 10, tzinfo=dt.UTC)
    frame = pl.DataFrame({"keyword": ["k"], "ts": [midnight - dt.timedelta(days=1)], "users": [50]})
    bucketed = cell_seeds(frame, CellContext(table="suppressions", dims=("keyword", "ts"), published=(USERS,),
                                             time_range=TimeRange(midnight - dt.timedelta(days=7), midnight),
                                             bucket="day"), USERS, PARAMS)
    window = cell_seeds(frame.drop("ts"), CellContext(table="suppressions", dims=("keyword",), published=(USERS,),
                                                      time_range=TimeRange(midnight - dt.timedelta(days=1), midnight)),
                        USERS, PARAMS)
    assert [(m, w.to_list()) for m, w in bucketed.levels] == [(m, w.to_list()) for m, w in window.levels]
