"""The privacy stage: every number the service publishes passes through `Privacy.publish`.

The modules: `params` (budget, cap rule, k, noise rate), `cells` (what a cell is, its description
and time levels), `meaning` (filters in canonical form), `noise` (the draws), `layers` (a draw per
place on user counts), `caps` (the per-cell caps and capped sums), `stage` (`Privacy`).

What it does to an aggregated frame (one row per cell):

1. **Consistent noise, one meaning one noise.** Each cell is described canonically — table, the
   dimension values (a grouped value or a filter's set of values), the time range it covers, and
   the data version of that range (the last generation that landed data for any of its dates) —
   and that description is hashed with HMAC-SHA512 under the secret; the digest's 32-bit words
   drive the draws. /query's filters are first put in their canonical form (`meaning`: values no
   stored event holds, a filter of every value, a coarser place implied by finer ones dropped),
   so phrasings of one meaning are one cell. A cell's noise is a weighted sum of Laplace draws
   (`cells.time_levels`): half its variance from its own description, half from draws seeded by
   its meaning and the blocks of hours its range's ends fall in, so a window moved by an hour
   keeps most of its noise; and a cell restricted to places carries on its user count one draw per
   place (`layers`), the same in every cell holding the place, so differencing sets of places
   cannot average it away. The same cell therefore gets the same noise whichever endpoint or
   query shape asks for it, and asking again cannot average it away — not in this hour and not
   in later hours (`as_of` is deliberately not part of the description: a finished day bucket
   keeps its noise for good), while new data for a cell's dates redraws its own part (otherwise
   two answers around an ingest would difference out the new rows exactly).
2. **A contribution cap per cell, chosen privately (sums: suppressions, events).** One user's
   total in a cell is capped at C before summing, and the sum's noise is scaled to C. A fixed C
   cannot serve a 30-user cell and a 200,000-user cell alike (too small: a silent undercount of
   large cells; too large: noise that buries small ones), so C is chosen per cell from two
   differentially private releases: the cell's noisy user count n^ (published anyway) and a
   *pilot* sum with a small fixed cap (`pilot_cap`) and a share of the measure's budget
   (`pilot_share`), never published. From them C = min(multiplier x mean^ x (1 + growth x
   log10(max(n^, 100) / 100)), cap_fit x max(n^, pilot^ - pilot_low noise sd)) within
   [cap_floor, max_cap], mean^ = (pilot^ - pilot_shrink noise sd) / n^ kept within
   [1, pilot_cap]. The second term is a ceiling that keeps a cell's noise a fraction of what its
   sum is known to be at least (every user brings at least 1; the pilot is at most the sum), so
   a small cell cannot get a large cap, and noise, from its pilot's own noise. A place over more
   than a week (`cells.family_dimension`) also reads its family's mean per user m (every place of
   its level, everything else alike: `caps.family_mean`, from the family's own noisy pilot sum and
   user count, paid out of the place's pilot share): its mean^ has family_weight users at m added
   (its pilot then read family_shrink noise sds low, 0, instead of pilot_shrink), and its ceiling
   counts each user as at least family_low x m, so a few dozen heavy users are not capped as light
   ones. The frame must hold the whole family, or the engine hands it beside
   (`publish(family=...)`, /query filtered on the place). All of it is
   post-processing of DP releases, so by adaptive composition the published sum is
   (pilot_share + (1 - pilot_share)) x epsilon = epsilon-DP on top of the cell's user count,
   whatever the user contributes (docs/privacy.md has the argument). Large cells get caps around their
   heaviest users (little bias, noise tiny in relative terms); small cells get small caps (Amin
   et al., "Bounding User Contributions: A Bias-Variance Trade-off in Differential Privacy",
   ICML 2019: the best cap is a high quantile of the per-user contributions, which grows with
   the number of users). docs/privacy.md has the numbers.
3. **Small-cell suppression.** A cell whose *noisy* user count is below k is not published: its
   row is dropped (ranked lists, geo lists, query results) or its numbers shown as 0 (a
   timeseries bucket, a sub-count).
4. **Post-processing.** Published numbers are non-negative integers.

The engine hands the stage, for the summed measures, each cell's pilot sum (column
`<name>_pilot`) and the per-user totals behind it (`Contributions`): the stage decides the caps
and asks `Contributions.capped_sums` for the capped sums of the cells it publishes.
"""

from service.privacy.caps import Contributions, reachable_rows
from service.privacy.cells import CellContext, Published, data_version
from service.privacy.noise import noise_key_fingerprint
from service.privacy.params import (
    EVENTS,
    KEYWORD_COUNT,
    PILOT,
    SUMMED,
    SUPPRESSIONS,
    UNIQUE_USERS,
    PrivacyParams,
)
from service.privacy.stage import Privacy

__all__ = ["EVENTS", "KEYWORD_COUNT", "PILOT", "SUMMED", "SUPPRESSIONS", "UNIQUE_USERS", "CellContext",
           "Contributions", "Privacy", "PrivacyParams", "Published", "data_version", "noise_key_fingerprint",
           "reachable_rows"]
