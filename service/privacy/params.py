"""The privacy parameters: the budget per measure, the cap rule and the threshold k, and the noise
rate they give each measure (service/settings.py holds the defaults of the configurable ones)."""

from __future__ import annotations

import dataclasses
import math

from service.settings import Settings

SUPPRESSIONS = "suppressions"
EVENTS = "events"
UNIQUE_USERS = "unique_users"
KEYWORD_COUNT = "keyword_count"
SUMMED = (SUPPRESSIONS, EVENTS)  # measures whose per-user contribution is capped per cell
PILOT = "_pilot"  # suffix of a summed column's pilot sum in the frame given to `publish`


@dataclasses.dataclass(frozen=True)
class PrivacyParams:
    """The privacy budget, cap rule and threshold (settings SIGNALS_PRIVACY_*)."""

    # The defaults of the settings are written once, in service/settings.py.
    epsilon_suppressions: float = Settings.privacy_epsilon_suppressions
    epsilon_events: float = Settings.privacy_epsilon_events
    epsilon_users: float = Settings.privacy_epsilon_users
    pilot_share: float = 0.2      # part of a sum's epsilon spent on the pilot sum that sets its cap
    pilot_cap: int = 32           # the pilot sum's fixed per-user cap
    cap_multiplier: float = 8.0   # cap = multiplier x mean per user x growth(n)
    cap_growth: float = 1.5       # growth(n) = 1 + cap_growth x log10(max(n, 100) / 100)
    pilot_shrink: float = 1.0     # the mean per user is read from pilot^ - pilot_shrink x its noise sd
    # The cap's ceiling, so that a cell's noise fits the cell (`caps.choose_caps`): no cap above
    # cap_fit x the cell's sum read low, max(n^, pilot^ - pilot_low x the pilot's noise sd) (every
    # user brings at least 1 to the sum), and none below cap_floor.
    cap_fit: float = 0.25
    pilot_low: float = 4.0
    cap_floor: int = 4
    # A cell in a family (cells.family_dimension: the places of one level over more than a week)
    # spends family_pilot_share and family_users_share of its measure's epsilon on the family's
    # pilot sum and user count, family_cell_pilot_share on its own pilot, and the rest on its sum
    # (family_sum_share, 0.89, against 0.8 outside a family: `summed_epsilon`). It leans on the family's
    # mean per user m (caps.family_mean), so its own pilot needs little: its mean per user reads as
    # if family_weight users at m were added to its own pilot read family_shrink (not pilot_shrink)
    # noise sds low (110 users against the pilot's s.d. of about 900 at 0.05: the weight 30 had
    # against 251 at 0.18), and its ceiling counts each user as bringing at least family_low x m
    # (at least 1), so a few dozen heavy users are not capped as light ones. Its cap's multiplier
    # and cap_fit are scaled by its sum's epsilon over 0.8 (`caps.choose_caps`): the same noise for
    # a cap that much larger.
    family_pilot_share: float = 0.015
    family_users_share: float = 0.005
    family_cell_pilot_share: float = 0.05
    # ...and its sum this share (not all that is left, 0.93): the most that keeps what one of its
    # releases costs within a cell's out of a family (`release_epsilon`: 1.334 either way), so the
    # budget's charges need not tell the two apart.
    family_sum_share: float = 0.89
    family_weight: float = 110.0
    family_low: float = 1.0
    family_shrink: float = 0.0
    # Time levels of a cell's noise (cells.time_levels): the share of its variance drawn from its
    # own range and data version (level 0); the rest is shared equally by the time_top_levels
    # largest levels l with 2^l hours at most time_span_blocks times the range's length, drawn from
    # the blocks its ends fall in, so a window moved by an hour keeps most of its noise.
    time_base_share: float = 0.5
    time_span_blocks: int = 2
    time_top_levels: int = 3
    # A noise layer per place on the user count of a cell restricted to places (layers.py): its s.d.
    # for each place the cell holds.
    place_layer_std: float = 1.5
    layer_min_sds: float = 2.0  # such a cell is shown only when its user count is this many s.d. above 0
    max_cap: int = Settings.privacy_max_cap  # no cap above this: the most one user adds to one cell's sum
    keyword_rows_per_user: int = 20  # rows (so keywords) one user brings into a geo keyword_count
    min_users: int = Settings.privacy_min_users  # k: cells with fewer (noisy) users are not published

    def __post_init__(self) -> None:
        for name in ("epsilon_suppressions", "epsilon_events", "epsilon_users"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if not 0 < self.pilot_share < 1:
            raise ValueError("pilot_share must be between 0 and 1")
        if min(self.pilot_cap, self.max_cap, self.keyword_rows_per_user, self.cap_floor) < 1 or self.min_users < 0:
            raise ValueError("caps must be at least 1 and min_users at least 0")
        if not (self.cap_multiplier > 0 and self.cap_growth >= 0 and self.cap_fit > 0 and self.pilot_low >= 0):
            raise ValueError("cap_multiplier and cap_fit must be positive, cap_growth and pilot_low not negative")
        if not (self.family_pilot_share > 0 and self.family_users_share > 0
                and self.family_pilot_share + self.family_users_share < self.pilot_share):
            raise ValueError("the family's shares must be positive and leave the cell's pilot a share")
        if not (self.family_cell_pilot_share > 0 and self.family_sum_share > 0 and self.family_cell_pilot_share
                + self.family_pilot_share + self.family_users_share + self.family_sum_share <= 1 + 1e-12):
            raise ValueError("a cell in a family's shares (its pilot, the family's two, its sum) must be "
                             "positive and add up to at most 1")
        if not (0 < self.time_base_share <= 1 and self.time_span_blocks >= 0 and self.time_top_levels >= 0):
            raise ValueError("time_base_share must be in (0, 1], time_span_blocks and time_top_levels not negative")
        if not (self.family_weight >= 0 and 0 <= self.family_low <= 1 and self.family_shrink >= 0):
            raise ValueError("family_weight and family_shrink must not be negative and family_low must be "
                             "between 0 and 1")

    @classmethod
    def exact(cls) -> PrivacyParams:
        """No noise, no caps, no suppression: only for tests that check exact aggregates."""
        return cls(epsilon_suppressions=math.inf, epsilon_events=math.inf, epsilon_users=math.inf,
                   max_cap=2**62, keyword_rows_per_user=2**62, min_users=0)

    def smallest_cap(self) -> int:
        """No cell's cap is below this (the stage's caps lie within [cap_floor, max_cap]; exact:
        max_cap). Users whose total in a cell is at most this lose nothing to any cap, so an engine
        may leave them out of `Contributions` when it also gives the cells' exact totals."""
        return min(self.max_cap, self.cap_floor)

    def epsilon(self, measure: str) -> float:
        return {SUPPRESSIONS: self.epsilon_suppressions, EVENTS: self.epsilon_events}.get(measure, self.epsilon_users)

    def sensitivity(self, measure: str) -> float:
        """How much one user can move a measure with a fixed bound: 1 for distinct users;
        keyword_count: each user brings at most keyword_rows_per_user rows (engine/polars/geo_heat.py).
        Summed measures have a cap per cell instead (`cap_expr`)."""
        return {KEYWORD_COUNT: self.keyword_rows_per_user}.get(measure, 1)

    def pilot_epsilon(self, measure: str, in_family: bool = False) -> float:
        """A summed measure's budget for a cell's own pilot sum: pilot_share of it, or
        family_cell_pilot_share for a cell in a family (which also spends the family's shares on
        the family's pilot and user count)."""
        return self.epsilon(measure) * (self.family_cell_pilot_share if in_family else self.pilot_share)

    def family_alphas(self, measure: str) -> tuple[float, float]:
        """The geometric parameters of a family's pilot sum (each user of each cell capped at
        pilot_cap, as a cell's pilot) and of its user count (1 per user and cell)."""
        epsilon = self.epsilon(measure)
        return math.exp(-epsilon * self.family_pilot_share / self.pilot_cap), math.exp(-epsilon * self.family_users_share)

    def summed_epsilon(self, measure: str, in_family: bool = False) -> float:
        """A summed measure's budget for its published sum: what its pilot (and, in a family, the
        family's releases) left. Its noise rate is this over the cell's cap (`alpha`, `noise.noisy`,
        `noise.summed_std`)."""
        if in_family:
            return self.epsilon(measure) * self.family_sum_share
        return self.epsilon(measure) * (1 - self.pilot_share)

    def family_cap_scale(self, measure: str) -> float:
        """How much larger a cap in a family may be for the same noise: its sum's epsilon over a
        cell's out of a family (`caps.choose_caps` scales the multiplier and the ceiling by it)."""
        return self.summed_epsilon(measure, in_family=True) / self.summed_epsilon(measure)

    def alpha(self, measure: str, cap: float | None = None, in_family: bool = False) -> float:
        """The geometric parameter of a measure's noise: P(noise = z) is proportional to alpha ** |z|.
        For a summed measure, `cap` is the cell's cap and the epsilon is what the pilot left."""
        if measure in SUMMED:
            return math.exp(-self.summed_epsilon(measure, in_family) / (cap or 1))
        return math.exp(-self.epsilon(measure) / self.sensitivity(measure))

    def noise_std(self, measure: str, cap: float | None = None, in_family: bool = False) -> float:
        return geometric_std(self.alpha(measure, cap, in_family))

    def release_epsilon(self, measure: str) -> float:
        """What one release of a measure in one cell can cost one user, pure epsilon: the bound of
        docs/privacy.md "What this guarantees", steps 1-5. A number's noise is a sum of independent
        Laplace draws of which its own (level 0) carries time_base_share of the variance; shifting
        the true value by d changes the sum's density by at most e^(d / b), b the own draw's scale,
        so a release costs sensitivity / b. A summed measure adds its pilot (one draw of weight 1,
        sensitivity pilot_cap) and takes the smallest cap (cap_floor: the largest cost per unit);
        a cell in a family spends less on its own pilot, adds the family's two releases and spends
        more on its sum, so the larger of the two costs bounds every cell (with the defaults, out of
        a family 1.334, in one 1.332: family_sum_share is set so). Infinite budgets (`exact`) cost nothing (0)."""
        if math.isinf(self.epsilon(measure)):
            return 0.0
        if measure in SUMMED:
            return max(self._summed_release(measure, False), self._summed_release(measure, True))
        return _cost(self.sensitivity(measure), laplace_scale(self.noise_std(measure), self.time_base_share))


    def _summed_release(self, measure: str, in_family: bool) -> float:
        """`release_epsilon` of a summed measure in a cell out of a family or in one: its own pilot,
        the family's two releases (pure epsilon, one geometric draw each: what they cost each
        cell), and its sum at the smallest cap."""
        pilot_alpha = math.exp(-self.pilot_epsilon(measure, in_family) / self.pilot_cap)
        cap = max(self.cap_floor, 1)
        family = self.epsilon(measure) * (self.family_pilot_share + self.family_users_share) if in_family else 0.0
        return _cost(self.pilot_cap, laplace_scale(geometric_std(pilot_alpha), 1.0)) + family + \
            _cost(cap, laplace_scale(self.noise_std(measure, cap, in_family), self.time_base_share))


def _cost(sensitivity: float, scale: float) -> float:
    """Pure epsilon of a Laplace draw of `scale` over a change of `sensitivity` (infinite without noise)."""
    return sensitivity / scale if scale > 0 else math.inf


def laplace_scale(sigma: float, share: float) -> float:
    """The scale of the Laplace draw carrying `share` of the variance of noise whose s.d., with
    rounding's 1/12 (noise.noisy), is sigma."""
    return math.sqrt(share * max(sigma * sigma - 1.0 / 12.0, 0.0) / 2.0)


def geometric_std(alpha: float) -> float:
    """The standard deviation of two-sided geometric noise with parameter alpha."""
    return math.sqrt(2 * alpha) / (1 - alpha)
