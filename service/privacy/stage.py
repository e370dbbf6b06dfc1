"""The privacy stage: `Privacy.publish` turns an aggregated frame into the numbers the service
publishes (the package docstring has what it does and why)."""

from __future__ import annotations

import dataclasses

import polars as pl

from service.privacy import charges
from service.privacy.caps import Contributions, capped_true, choose_caps, family_mean
from service.privacy.cells import (
    CellContext,
    Published,
    cell_seeds,
    family_dimension,
    family_in_frame,
    family_seeds,
)
from service.privacy.layers import place_layers
from service.privacy.noise import Draws, noise_key, noisy, summed_std
from service.privacy.noise import draws as seeded_draws
from service.privacy.params import PILOT, SUMMED, UNIQUE_USERS, PrivacyParams


@dataclasses.dataclass
class _Draws:
    """What `publish` has drawn so far for one frame."""

    drop: pl.Series                                   # rows not published
    noisy: dict[str, pl.Series] = dataclasses.field(default_factory=dict)
    stds: dict[str, pl.Series] = dataclasses.field(default_factory=dict)
    # Summed columns: each cell's cap, and the cell's uniforms and suppression.
    caps: dict[str, pl.Series] = dataclasses.field(default_factory=dict)
    summed: dict[str, tuple[Draws, pl.Series, bool]] = dataclasses.field(default_factory=dict)  # + in a family


class Privacy:
    def __init__(self, secret: str, params: PrivacyParams | None = None) -> None:
        self.params = params or PrivacyParams()
        self._key = noise_key(secret)

    @classmethod
    def exact(cls) -> Privacy:
        """No noise, caps or suppression (tests of exact aggregates only)."""
        return cls("exact", PrivacyParams.exact())

    def publish(self, frame: pl.DataFrame, cell: CellContext, contributions: Contributions | None = None,
                noise_std: bool = False, family: pl.DataFrame | None = None) -> pl.DataFrame:
        """Noisy, non-negative Int64 numbers for every Published column; suppressed cells dropped
        or zeroed. Other columns pass through unchanged (pilot columns are removed).

        Summed measures need `contributions` (see the package docstring). With `noise_std`, each
        Published column gets a `<column>_std` column: the standard deviation of the noise that
        was added to it (what trending needs to tell growth from noise; caps are post-processing
        of DP releases, so showing them reveals nothing more).

        `family`: when the frame's cells are in a family (`cells.family_dimension`) that the frame
        does not hold whole (filtered on the family's dimension), the family's cells: a frame of the
        same columns grouped by that dimension, without its filter (`family_in_frame`)."""
        summed = [p for p in cell.published if p.measure in SUMMED]
        if summed and contributions is None:
            raise ValueError("summed measures need the contributions behind them")
        if frame.height == 0:
            empty = frame.drop(f"{p.column}{PILOT}" for p in summed).with_columns(
                pl.lit(0, dtype=pl.Int64).alias(p.column) for p in cell.published)
            return empty.with_columns(pl.lit(0.0).alias(f"{p.column}_std") for p in cell.published) \
                if noise_std else empty
        draws = _Draws(drop=pl.Series([False] * frame.height))
        self._draw_counts(frame, cell, noise_std, draws, family)
        if summed:
            assert contributions is not None
            self._draw_sums(frame, summed, contributions, noise_std, draws)
        result = frame.drop(f"{p.column}{PILOT}" for p in summed).with_columns(
            series.alias(name) for name, series in draws.noisy.items())
        if noise_std:
            result = result.with_columns(series.alias(f"{name}_std") for name, series in draws.stds.items())
        return result.filter(~draws.drop) if draws.drop.any() else result

    def _draw_counts(self, frame: pl.DataFrame, cell: CellContext, noise_std: bool, draws: _Draws,
                     family: pl.DataFrame | None) -> None:
        """Per group of Published columns that share a cell: the noisy user count that decides
        suppression, the noisy counts, and the caps of the summed columns (their sums come later)."""
        groups: dict[tuple, list[Published]] = {}
        for item in cell.published:
            groups.setdefault((item.period, item.extra, item.users), []).append(item)
        for (_period, _extra, users), items in groups.items():
            # The group's cells are releases (charges.py): its user count, and each other measure.
            collecting = charges.collecting()
            if collecting is not None:
                collecting.add(self.params.release_epsilon(UNIQUE_USERS) + sum(
                    self.params.release_epsilon(item.measure) for item in items if item.column != users), frame.height)
            drawn = seeded_draws(self._key, cell_seeds(frame, cell, items[0], self.params))
            # A cell restricted to places: a draw per place on its user counts (layers.py).
            layer = place_layers(self._key, frame, cell, items[0], self.params)
            users_noisy = self._noisy(frame.get_column(users), UNIQUE_USERS, drawn, layer=layer and layer[0])
            below = users_noisy < self.params.min_users
            if layer is not None:
                # Many places' layers make a user count noisy enough to lift an empty cell past k:
                # it is shown only when it also stands layer_min_sds of its noise s.d. above 0
                # (a decision on the published count and its public s.d.: post-processing).
                sd = (self.params.noise_std(UNIQUE_USERS) ** 2 + layer[1]).sqrt()
                below = below | (users_noisy.cast(pl.Float64) < self.params.layer_min_sds * sd)
            for item in items:
                if item.measure in SUMMED:
                    pilot = frame.get_column(f"{item.column}{PILOT}")

                    def noisy_pilot(alpha: float, pilot: pl.Series = pilot, measure: str = item.measure + PILOT,
                                    drawn: Draws = drawn) -> pl.Series:
                        return self._noisy(pilot, measure, drawn, alpha=alpha)

                    mean_of_family = self._family_mean(frame, cell, item, family)
                    draws.caps[item.column] = choose_caps(
                        self.params, item.measure, users_noisy, noisy_pilot, family=mean_of_family)
                    draws.summed[item.column] = (drawn, below, mean_of_family is not None)
                    continue
                # The cell's own user count was just drawn; any other measure gets its own slot.
                layered = layer if item.measure == UNIQUE_USERS else None
                value = users_noisy if item.column == users else \
                    self._noisy(frame.get_column(item.column), item.measure, drawn, layer=layered and layered[0])
                draws.noisy[item.column] = value
                if noise_std:
                    std = pl.repeat(self.params.noise_std(item.measure), frame.height, eager=True)
                    draws.stds[item.column] = std if layered is None else (std.pow(2) + layered[1]).sqrt()
                if item.when_suppressed == "drop":
                    draws.drop = draws.drop | below
                else:
                    draws.noisy[item.column] = pl.select(pl.when(below).then(0).otherwise(value)).to_series()

    def _family_mean(self, frame: pl.DataFrame, cell: CellContext, item: Published,
                     family: pl.DataFrame | None) -> float | None:
        """The mean per user of the family of a summed Published group's cells (`caps.family_mean`),
        from the family's own releases: its pilot sum and its user count, each with noise drawn
        from the family's description; None when the cells are in no family."""
        dimension = family_dimension(cell.dims, cell.fixed, item.period or cell.time_range, item.extra)
        if dimension is None:
            return None
        if family_in_frame(cell.dims, cell.fixed, dimension):
            members = frame
        elif family is None:
            raise ValueError(f"the cells' family (every {dimension}) is not in the frame: pass `family`")
        else:
            members = family
        drawn = seeded_draws(self._key, family_seeds(cell, item, dimension, self.params))
        pilot_alpha, users_alpha = self.params.family_alphas(item.measure)
        pilot = self._noisy(pl.Series([members.get_column(f"{item.column}{PILOT}").sum()]), item.measure + PILOT,
                            drawn, alpha=pilot_alpha)
        users = self._noisy(pl.Series([members.get_column(item.users).sum()]), UNIQUE_USERS, drawn, alpha=users_alpha)
        return family_mean(self.params, item.measure, float(pilot[0]), float(users[0]))

    def _draw_sums(self, frame: pl.DataFrame, summed: list[Published], contributions: Contributions,
                   noise_std: bool, draws: _Draws) -> None:
        """The noisy capped sums of the summed columns, computed only for rows that are shown."""
        for item in summed:
            if item.when_suppressed == "drop":
                draws.drop = draws.drop | draws.summed[item.column][1]
        # Capped sums only for rows that will be shown (a count shown as 0 is zeroed below).
        true = capped_true(frame, contributions, draws.caps, ~draws.drop)
        for item in summed:
            drawn, below, in_family = draws.summed[item.column]
            cap = draws.caps[item.column]
            value = self._noisy(true.get_column(item.column), item.measure, drawn, cap, in_family=in_family)
            if item.when_suppressed == "zero":
                value = pl.select(pl.when(below).then(0).otherwise(value)).to_series()
            draws.noisy[item.column] = value
            if noise_std:
                draws.stds[item.column] = pl.select(
                    summed_std(self.params, item.measure, pl.lit(cap), in_family)).to_series()

    def _noisy(self, true: pl.Series, measure: str, uniforms: Draws,
               cap: pl.Series | None = None, alpha: float | None = None, layer: pl.Series | None = None,
               in_family: bool = False) -> pl.Series:
        """Every draw of the stage goes through here (`noise.noisy`); bench/bench_endpoints.py's
        `Noiseless` overrides it to switch the noise off."""
        return noisy(self.params, true, measure, uniforms, cap, alpha, layer, in_family)
