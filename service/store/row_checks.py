"""The ingest contract's column checks: `Rows` holds a file's columns as the checks clean them and
one reason expression per column, evaluated together at the end (`validate.validate_rows`). The
checks of one column each are its methods; the geography rules, which read four columns together,
are geography.py's. The rule of each column: docs/data.md, "The contract".

The columns' checks run side by side, each in a thread (`Rows.run`: polars releases the GIL), and
their reasons are joined in one fixed order.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import os
from collections.abc import Callable, Mapping, Sequence

import polars as pl

from service.store import schema
from service.store.domains import domain_verdict
from service.store.kinds import (
    ACCEPTS,
    DESCRIBED,
    EXPECTED,
    INTEGER_FIELD,
    NUMBER,
    STRING,
    BadKinds,
    as_text,
    column_type,
    described,
    map_distinct,
)
from service.store.normalise import KEYWORD_MAX_CHARS, normalise_keyword
from service.store.timestamps import parse_ts
from service.store.user_ids import hash_user_ids

UTC = dt.UTC
MAX_FUTURE_SKEW = dt.timedelta(minutes=5)
SUPPRESSIONS_MAX = 2**31 - 1  # stored as Int32

_SHOWN_CHARS = 40  # longer values are cut in reasons so one bad row cannot flood the quarantine
_CONTROL = r"[\x00-\x1f\x7f-\x9f]"


def quoted(expr: pl.Expr) -> pl.Expr:
    """A value quoted for a reason, cut to a readable length."""
    cut = (
        pl.when(expr.str.len_chars() > _SHOWN_CHARS)
        .then(pl.concat_str([expr.str.head(_SHOWN_CHARS - 1), pl.lit("…")]))
        .otherwise(expr)
    )
    return pl.concat_str([pl.lit("'"), cut, pl.lit("'")])


class Rows:
    """Cleaned columns plus one reason expression per column, evaluated together at the end.

    The work frame holds, per column, `<name>` (the clean value), `<name>__raw` (the value as
    given, as text, for messages), `<name>__given` (not null in the input) and helper columns.
    """

    def __init__(
        self, frame: pl.DataFrame, table: str, *, text_cells: bool, kinds: Mapping[str, pl.Series]
    ) -> None:
        self.frame = frame
        self.table = table
        self.text_cells = text_cells
        self.kinds = kinds
        self.n = frame.height
        self.columns: dict[str, pl.Series] = {}
        self.reasons: list[pl.Expr] = []
        self._bad: dict[str, str | None] = {}  # a kind every given value has, when the type is wrong

    def run(self, checks: Sequence[Callable[[Rows], object]]) -> None:
        """The column checks, side by side: each on a fork of these rows in a thread of its own
        (polars releases the GIL, so the columns' passes share the cores), merged in the checks'
        order, so that a row's reasons read the same whichever check finishes first. The checks
        write disjoint columns."""
        forks = [self._fork() for _ in checks]
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(checks), os.cpu_count() or 1)) as pool:
            for done in [pool.submit(check, fork) for check, fork in zip(checks, forks, strict=True)]:
                done.result()  # a check's exception is raised here
        for fork in forks:
            self.columns.update(fork.columns)
            self.reasons.extend(fork.reasons)
            self._bad.update(fork._bad)

    def _fork(self) -> Rows:
        return Rows(self.frame, self.table, text_cells=self.text_cells, kinds=self.kinds)

    def work_frame(self) -> pl.DataFrame:
        given = {
            f"{name}__given": (
                self.frame[name].is_not_null() if name in self.frame.columns else pl.repeat(False, self.n, eager=True)
            )
            for name in schema.SCHEMAS[self.table]
        }
        return pl.DataFrame({**self.columns, **given})

    def _nulls(self) -> pl.Series:
        return pl.Series([None] * self.n, dtype=pl.String)

    def text(self, name: str, zero_pad: int = 0) -> pl.Series:
        """Register `<name>__raw` (trimmed text) and the kinds of wrong values; return the text."""
        if name in self.frame.columns:
            text, bad = as_text(
                self.frame[name], ACCEPTS[column_type(name)], kinds=self.kinds.get(name), zero_pad=zero_pad
            )
        else:
            text, bad = self._nulls(), None
        self.columns[f"{name}__raw"] = text
        self.note_bad(name, bad)
        return text

    def note_bad(self, name: str, bad: BadKinds) -> None:
        if isinstance(bad, pl.Series):
            self.columns[f"{name}__bad"] = bad.replace_strict(DESCRIBED, default=bad, return_dtype=pl.String)
            self._bad[name] = None
        else:
            self._bad[name] = bad

    def wrong_type(self, name: str) -> pl.Expr | None:
        """Reason for a value of a type the column does not take; None when there is none."""
        expected = EXPECTED[column_type(name)]
        kind = self._bad.get(name)
        if kind:
            reason = f"{name}: expected {expected}, got {described(kind)}"
            return pl.when(pl.col(f"{name}__given")).then(pl.lit(reason))
        if f"{name}__bad" in self.columns:
            return pl.when(pl.col(f"{name}__bad").is_not_null()).then(
                pl.format(f"{name}: expected {expected}, got {{}}", pl.col(f"{name}__bad"))
            )
        return None

    def presence(self, name: str, *, required: bool) -> pl.Expr | None:
        """Reason for a value of the wrong type, or for a missing required value; None if neither."""
        parts = [self.wrong_type(name)]
        if required:
            parts.append(pl.when(pl.col(f"{name}__raw").is_null()).then(pl.lit(f"{name}: missing")))
        present = [p for p in parts if p is not None]
        if not present:
            return None
        return pl.coalesce(present) if len(present) > 1 else present[0]

    def add(self, *parts: pl.Expr | None) -> None:
        """Add a column's reason: the first of `parts` that applies."""
        present = [p for p in parts if p is not None]
        self.reasons.append(pl.coalesce(present) if len(present) > 1 else present[0])

    # -- columns ----------------------------------------------------------------------------

    def require_text(self, name: str) -> None:
        self.columns[name] = self.text(name)
        self.add(self.presence(name, required=True))

    def check_user_id(self, secret: str) -> None:
        """Any text; stored only as its keyed hash (`user_id__hashed`, each distinct id once)."""
        self.require_text("user_id")
        self.columns["user_id__hashed"] = hash_user_ids(self.columns["user_id"], secret).rename("user_id__hashed")

    def check_ts(self, now: dt.datetime) -> None:
        ts, text, bad = parse_ts(self.frame["ts"], self.kinds.get("ts"))
        self.columns["ts"], self.columns["ts__raw"] = ts, text
        self.note_bad("ts", bad)
        limit = now.astimezone(UTC) + MAX_FUTURE_SKEW
        self.add(
            self.presence("ts", required=True),
            pl.when(pl.col("ts").is_null())
            .then(pl.format("ts: {} is not an ISO 8601 timestamp", quoted(pl.col("ts__raw"))))
            .when(pl.col("ts") > pl.lit(limit).cast(schema.TS))
            .then(
                pl.format(
                    "ts: {} is in the future (more than {} minutes after {})",
                    pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%S%.fZ"),
                    pl.lit(int(MAX_FUTURE_SKEW.total_seconds() // 60)),
                    pl.lit(now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")),
                )
            ),
        )

    def check_keyword(self) -> None:
        self.columns["keyword"] = map_distinct(self.text("keyword"), normalise_keyword, pl.String())
        keyword = pl.col("keyword")
        self.add(
            self.presence("keyword", required=True),
            pl.when(keyword == "")
            .then(pl.lit("keyword: empty after normalisation"))
            .when(keyword.str.len_chars() > KEYWORD_MAX_CHARS)
            .then(
                pl.format(
                    "keyword: {} characters after normalisation, at most {} allowed",
                    keyword.str.len_chars(),
                    pl.lit(KEYWORD_MAX_CHARS),
                )
            )
            .when(keyword.str.contains(_CONTROL))
            .then(pl.lit("keyword: contains control characters")),
        )

    def check_enum(self, name: str, allowed: tuple[str, ...]) -> None:
        self.columns[name] = self.text(name).str.to_lowercase()
        self.add(
            self.presence(name, required=True),
            pl.when(pl.col(name).is_in(allowed).not_()).then(
                pl.format(f"{name}: {{}} is not one of {', '.join(allowed)}", quoted(pl.col(f"{name}__raw")))
            ),
        )

    def check_domain(self) -> None:
        raw = self.text("domain")
        distinct = raw.drop_nulls().unique()
        verdicts = [domain_verdict(value) for value in distinct.to_list()]
        if verdicts:
            self.columns["domain"] = raw.replace_strict(
                distinct, pl.Series([v[0] for v in verdicts], dtype=pl.String), default=None, return_dtype=pl.String
            )
            problem = raw.replace_strict(
                distinct, pl.Series([v[1] for v in verdicts], dtype=pl.String), default=None, return_dtype=pl.String
            )
        else:
            self.columns["domain"], problem = self._nulls(), self._nulls()
        self.columns["domain__problem"] = problem
        self.add(
            self.presence("domain", required=True),
            pl.when(pl.col("domain__problem").is_not_null()).then(
                pl.format("domain: {} {}", quoted(pl.col("domain__raw")), pl.col("domain__problem"))
            ),
        )

    def check_count(self) -> None:
        raw = self.frame["suppressions"]
        nulls = pl.Series([None] * self.n, dtype=pl.String)
        if self.text_cells:
            # CSV: every cell is text; an integer is written in digits, as in a query string.
            text, _ = as_text(raw, frozenset({STRING}))
            kind_text = nulls
            digits = text.str.contains(r"^-?[0-9]+$")
        else:
            text, bad = as_text(raw, ACCEPTS[INTEGER_FIELD], kinds=self.kinds.get("suppressions"))
            if isinstance(bad, str):
                kind_text = pl.select(pl.when(raw.is_not_null()).then(pl.lit(bad))).to_series()
            else:
                kind_text = nulls if bad is None else bad
            digits = kind_text.is_null()  # integers already written in digits
        count_values = pl.select(pl.when(digits).then(text.cast(pl.Int64, strict=False))).to_series()
        self.columns["suppressions"] = count_values.rename("suppressions")
        self.columns["suppressions__raw"] = text
        self.columns["suppressions__kind"] = kind_text
        self.columns["suppressions__huge"] = digits & text.is_not_null() & count_values.is_null()  # beyond Int64
        kind, count, shown = pl.col("suppressions__kind"), pl.col("suppressions"), quoted(pl.col("suppressions__raw"))
        self.add(
            pl.when(kind == NUMBER)
            .then(pl.format("suppressions: {} is not an integer", shown))
            .when(kind == STRING)
            .then(pl.format("suppressions: expected an integer, got a string: {}", pl.coalesce(shown, pl.lit("''"))))
            .when(kind.is_not_null())
            .then(
                pl.format(
                    "suppressions: expected an integer, got {}",
                    kind.replace_strict(DESCRIBED, default=kind, return_dtype=pl.String),
                )
            )
            .when(pl.col("suppressions__raw").is_null())
            .then(pl.lit("suppressions: missing"))
            .when(pl.col("suppressions__huge"))
            .then(pl.format("suppressions: {} is more than {}", pl.col("suppressions__raw"), pl.lit(SUPPRESSIONS_MAX)))
            .when(count.is_null())
            .then(pl.format("suppressions: {} is not an integer", shown))
            .when(count < 1)
            .then(pl.format("suppressions: {} is less than 1", count))
            .when(count > SUPPRESSIONS_MAX)
            .then(pl.format("suppressions: {} is more than {}", count, pl.lit(SUPPRESSIONS_MAX)))
        )
