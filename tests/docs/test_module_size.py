"""No product module passes 400 lines (issue 44): a module past that mixes roles, and is split into
modules named for them (as service/store/validate.py, writer.py and snapshot.py were). Counted
over service/ and cache/, every line (docstrings and comments included: they are read too).

`KNOWN` lists the modules that were longer when the rule came, each with its size then. They are
exceptions to split later, not a licence: the test fails when any other module passes the limit,
and when a listed one no longer does (take it off the list then).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.support.processes import ROOT

LIMIT = 400
PACKAGES = ("service", "cache")

KNOWN: dict[str, int] = {}  # none left: service/store/formats.py and service/accounts/account_store.py were split


def line_counts(paths: Iterable[Path], root: Path = ROOT) -> dict[str, int]:
    """Path relative to `root` -> its number of lines."""
    return {path.relative_to(root).as_posix(): len(path.read_text().splitlines()) for path in paths}


def too_long(counts: Mapping[str, int], known: Mapping[str, int], limit: int = LIMIT) -> dict[str, int]:
    """Modules past `limit` that are not known exceptions."""
    return {path: lines for path, lines in sorted(counts.items()) if lines > limit and path not in known}


def product_modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_no_module_passes_the_limit() -> None:
    counts = line_counts(product_modules())
    assert len(counts) > 100
    assert too_long(counts, KNOWN) == {}, f"split these modules by role (at most {LIMIT} lines each)"


def test_every_known_exception_is_still_one() -> None:
    counts = line_counts(product_modules())
    assert {path: counts.get(path, 0) for path in KNOWN if counts.get(path, 0) <= LIMIT} == {}, \
        "no longer past the limit (or gone): take it off KNOWN"


def test_the_check_finds_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (tmp_path / "listed.py").write_text("x = 1\n" * (LIMIT + 50))
    counts = line_counts(tmp_path.iterdir(), root=tmp_path)
    assert counts["short.py"] == LIMIT
    assert too_long(counts, {"listed.py": LIMIT + 50}) == {"long.py": LIMIT + 1}
