"""A contribution cap per cell, chosen privately (the package docstring, point 2): the cap of each
cell from its noisy pilot sum and user count, and the capped sums from the per-user totals."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import polars as pl

from service.privacy.params import PrivacyParams, geometric_std


@dataclasses.dataclass(frozen=True)
class Contributions:
    """Each user's total in each cell, behind a frame's summed measures.

    `per_user` has the `keys` columns (identifying the cell, as in the frame given to `publish`)
    and one column per summed Published column holding one user's total in that cell; a user
    who did not take part in a cell has no row there (or 0). No keys: one cell, every row in it.
    """

    per_user: pl.DataFrame
    keys: tuple[str, ...] = ()
    # Optional: keys + each column's exact (uncapped) sum per cell. With it, a capped sum is the
    # total less what the users above the cap bring beyond it, so only those users' rows are
    # joined with the caps (a few per cent of them) instead of every row; and `per_user` may leave
    # out the users whose totals are all at most the smallest cap the stage can choose
    # (`PrivacyParams.smallest_cap`): they lose nothing to any cap (`reachable_rows`).
    totals: pl.DataFrame | None = None

    def capped_sums(self, caps: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
        """`caps` (keys + `<column>_cap` per column, one row per cell) with each column's capped sum
        (sum over users of min(total, cap)) added; cells without rows get 0."""
        cap_columns = [f"{c}_cap" for c in columns]
        if not self.keys:
            capped = [pl.min_horizontal(pl.col(c), pl.lit(caps.get_column(f"{c}_cap")[0])).sum().cast(pl.Int64).alias(c)
                      for c in columns]
            sums = self.per_user.lazy().select(capped).collect()
            return caps.with_columns(sums.get_column(c) for c in columns)
        # Join on the per-user side's key types (Enum for stored dimensions): cheap for the
        # small caps frame, where casting the per-user rows would not be.
        keys = list(self.keys)
        typed = caps.select(*(pl.col(k).cast(self.per_user.schema[k]) for k in keys), *cap_columns)
        rows = self.per_user.lazy()
        if self.totals is None:
            aggregates = [pl.min_horizontal(pl.col(c), pl.col(f"{c}_cap")).sum().cast(pl.Int64).alias(c) for c in columns]
        else:
            # Only users above the smallest cap of some column can lose anything to a cap.
            lowest = [caps.get_column(name).min() for name in cap_columns]
            rows = rows.filter(pl.any_horizontal(pl.col(c) > low for c, low in zip(columns, lowest, strict=True)))
            aggregates = [(pl.col(c) - pl.col(f"{c}_cap")).clip(lower_bound=0).sum().cast(pl.Int64).alias(c)
                          for c in columns]
        sums = rows.join(typed.lazy(), on=keys, how="inner").group_by(keys).agg(aggregates).collect()
        joined = typed.join(sums, on=keys, how="left", maintain_order="left")
        if self.totals is None:
            return caps.with_columns(joined.get_column(c).fill_null(0) for c in columns)
        totals = typed.select(keys).join(self.totals.select(*keys, *columns), on=keys, how="left", maintain_order="left")
        return caps.with_columns(
            (totals.get_column(c).fill_null(0) - joined.get_column(c).fill_null(0)).cast(pl.Int64).alias(c)
            for c in columns
        )


def reachable_rows(per_user: pl.DataFrame, columns: Sequence[str], params: PrivacyParams) -> pl.DataFrame:
    """The rows of per-user totals a cap can reach: some column above the smallest cap the stage
    can choose. Only these need to go into `Contributions.per_user` when its `totals` are given;
    they are usually a few per cent of the rows (most are a user's one or few events in a cell).
    One rule for every engine (the ClickHouse engine's SQL applies it too, engine/clickhouse/cells.py)."""
    smallest = params.smallest_cap()
    return per_user.filter(pl.any_horizontal(pl.col(c) > smallest for c in columns))


def family_mean(params: PrivacyParams, measure: str, pilot_noisy: float, users_noisy: float) -> float:
    """A family's mean per user (pilot sum over user count: each user of each of its cells, capped
    at pilot_cap), read cautiously from its noisy releases: (P^ - 2 sd) / (N^ + 2 sd) within
    [1, pilot_cap]. A small family reads 1, which leaves its cells' caps as without a family."""
    pilot_alpha, users_alpha = params.family_alphas(measure)
    if pilot_alpha == 0.0:  # exact
        return 1.0
    low = pilot_noisy - 2.0 * geometric_std(pilot_alpha)
    high = users_noisy + 2.0 * geometric_std(users_alpha)
    return min(max(low / high, 1.0), float(params.pilot_cap)) if high > 0 else 1.0


def choose_caps(params: PrivacyParams, measure: str, users_noisy: pl.Series,
                noisy_pilot: Callable[[float], pl.Series], family: float | None = None) -> pl.Series:
    """Each cell's cap for a summed measure, from its noisy pilot sum and noisy user count and, for
    cells in a family (`cells.family_dimension`), the family's mean per user m (`family_mean`);
    so the cap is post-processing of those releases (docs/privacy.md "What this guarantees").
    `noisy_pilot(alpha)` draws the pilot sums' noise with that geometric parameter (a cell in a
    family spends less on its own pilot: `PrivacyParams.pilot_epsilon`).

    cap = min(multiplier x scale x mean^ x growth(n^), ceiling), within [cap_floor, max_cap], where
    - scale = 1, or in a family the sum's epsilon there over its epsilon outside one
      (`PrivacyParams.family_cap_scale`: 0.89 / 0.8 with the defaults): a cell in a family spends
      less on its own pilot and more on its sum, whose noise for a given cap is as much smaller;
    - mean^ = (pilot^ - shrink x sd + w x m) / (n^ + w) within [1, pilot_cap] (sd: the pilot
      noise's; w = family_weight and shrink = family_shrink in a family whose m reads above 1, else
      w = 0, m = 1 and shrink = pilot_shrink): the cell's mean per user read cautiously, as if w
      users at the family's mean were added to its own (the family's precise m is what keeps a
      small place's noisy pilot from setting its cap; reading that pilot low as well capped a few
      dozen heavy users as light ones: issue 41);
      growth(n) = 1 + cap_growth x log10(max(n, 100) / 100);
    - ceiling = cap_fit x scale x max(n^ x max(1, family_low x m), pilot^ - pilot_low x sd): a
      share of the cell's sum read low (every user brings at least 1 to it, in a family a share of
      its mean; the pilot is at most the sum), so that the sum's noise, whose scale is cap /
      epsilon, stays a fraction of the cell whatever the pilot's own noise drew (in a family the
      same fraction: scale). Without it a small cell whose pilot noise came out high got a large
      cap and noise to match, and rankings ordered by noisy sums were led by such cells. Without the family's terms, a place of a few dozen heavy users
      over weeks was capped as if they were light: its pilot cannot tell them apart.
    """
    if math.isinf(params.epsilon(measure)):  # exact: nothing is capped
        return pl.repeat(params.max_cap, users_noisy.len(), dtype=pl.Int64, eager=True)
    alpha = math.exp(-params.pilot_epsilon(measure, in_family=family is not None) / params.pilot_cap)
    sd = geometric_std(alpha)
    pilot_noisy = noisy_pilot(alpha)
    mean_of_family = family if family is not None and family > 1.0 else 1.0
    weight = params.family_weight if mean_of_family > 1.0 else 0.0
    users = users_noisy.cast(pl.Float64).clip(lower_bound=1.0)
    frame = pl.DataFrame({"pilot": pilot_noisy.cast(pl.Float64), "users": users})
    pilot, n = pl.col("pilot"), pl.col("users")
    shrink = params.family_shrink if weight > 0 else params.pilot_shrink
    mean = ((pilot - shrink * sd + weight * mean_of_family) / (n + weight)).clip(1.0, float(params.pilot_cap))
    growth = 1.0 + params.cap_growth * (n.clip(lower_bound=100.0) / 100.0).log10()
    least = n * max(1.0, params.family_low * mean_of_family)
    # A cell in a family has a larger budget for its sum, so less noise for one cap: its cap may be
    # as much larger for the same noise (PrivacyParams.summed_epsilon).
    scale = 1.0 if family is None else params.family_cap_scale(measure)
    ceiling = params.cap_fit * scale * pl.max_horizontal(least, pilot - params.pilot_low * sd)
    cap = pl.min_horizontal(params.cap_multiplier * scale * mean * growth, ceiling).ceil()
    cap = cap.clip(float(params.smallest_cap()), float(params.max_cap)).cast(pl.Int64)
    return frame.select(cap.alias("cap")).to_series()


def capped_true(frame: pl.DataFrame, contributions: Contributions, caps: dict[str, pl.Series],
                needed: pl.Series) -> pl.DataFrame:
    """Each summed column's capped sum per row of `frame` (0 where not `needed`)."""
    rows = needed.arg_true()
    wanted = pl.DataFrame([series[rows].alias(f"{name}_cap") for name, series in caps.items()])
    if contributions.keys:
        wanted = frame.select(contributions.keys)[rows].hstack(wanted)
    sums = contributions.capped_sums(wanted, list(caps)) if rows.len() else wanted
    return pl.DataFrame({
        name: pl.zeros(frame.height, dtype=pl.Int64, eager=True).scatter(rows, sums.get_column(name))
        if rows.len() else pl.zeros(frame.height, dtype=pl.Int64, eager=True)
        for name in caps
    })
