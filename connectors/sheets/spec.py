"""What a report is: the endpoint and its parameters, where it goes, how it is written."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class ReportSpec:
    """One report: the endpoint and its parameters, where it goes, and how it is written.
    `history`: append one snapshot per period with a leading as_of column instead of replacing the
    table; `backfill`: the number of periods (the current one and the ones before, one window
    apart) a history refresh makes sure are in the sheet; `all_pages`: every page of a ranked answer
    (`--all`), not only its first `limit` rows."""

    endpoint: str
    params: Mapping[str, Any]
    spreadsheet: str | None
    worksheet: str
    history: bool = False
    backfill: int = 1
    all_pages: bool = False

    @property
    def label(self) -> str:
        return f"{self.worksheet} ({self.endpoint})"
