"""What an answer costs the people in it, for the privacy budget (service/privacy/budget.py).

Every cell whose noise the privacy stage draws is a release: its numbers cost each person in it up
to their release epsilon (`PrivacyParams.release_epsilon`; docs/privacy.md "What this guarantees").
An answer's charge is the sum over all the cells its computation drew, shown or not (a ranked
list's order and a suppressed cell's absence are read from the noisy numbers of every cell
computed), counted as if one person were in every one of them: the worst case, which the budget
bounds whatever the data.

The stage adds to the `Charges` of the computation running it: `charging()` sets them for the
current thread (a context variable), so the serving code learns what the answer it computed costs
without any engine knowing about budgets."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator

MICRO = 1_000_000  # charges are kept in micro-epsilon: whole numbers, so adding them is exact
MOST = 2 ** 62     # a charge no budget can pay (noise too small to bound anything: infinite epsilon)


@dataclasses.dataclass
class Charges:
    """The releases one computation drew: how many cells, and their epsilon together."""

    cells: int = 0
    epsilon: float = 0.0

    def add(self, epsilon_per_cell: float, cells: int) -> None:
        if cells > 0 and epsilon_per_cell > 0:
            self.cells += cells
            self.epsilon += epsilon_per_cell * cells

    @property
    def micro(self) -> int:
        """The charge in micro-epsilon, rounded up (never under-charged)."""
        if not math.isfinite(self.epsilon) or self.epsilon * MICRO >= MOST:
            return MOST
        return -(-round(self.epsilon * MICRO * 1000) // 1000)


_current: contextvars.ContextVar[Charges | None] = contextvars.ContextVar("signals_privacy_charges", default=None)


@contextlib.contextmanager
def charging() -> Iterator[Charges]:
    """Collect the charges of the releases drawn inside the block (in this thread)."""
    charges = Charges()
    token = _current.set(charges)
    try:
        yield charges
    finally:
        _current.reset(token)


def collecting() -> Charges | None:
    """The charges of the computation running in this thread, or None when nothing collects them
    (tests and benchmarks that call engines directly): the privacy stage adds each group of cells
    it draws (`Charges.add`)."""
    return _current.get()
