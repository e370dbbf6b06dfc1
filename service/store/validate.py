"""The ingest contract's row validator: which raw rows may enter the store, and in what form (DESIGN "Event data").

`validate_rows` takes a frame of raw rows as read from a file (any dtypes) and splits it into
rows in exactly the stored schema (`schema.SCHEMAS`) and rejected rows, each with a readable
reason naming the column and the problem (several problems of one row are joined with "; ").

Rules and decisions:

- Columns: every column of the stored schema is required, except the nullable geography columns
  `region`, `county`, `city`, which may be absent (treated as null). A missing required column or
  any column the table does not have rejects the whole file (`ContractError`, naming the columns).
  Unknown columns are refused rather than ignored because a misspelt optional column ("regoin")
  would otherwise silently turn real data into nulls.
- Types are checked on every value before anything is converted (`COLUMN_TYPES`): a value of a
  type its column does not take is rejected with "<column>: expected <type>, got <kind>", never
  turned into text. Text columns (`keyword`, `domain`, `platform`, `page_context`, `action`,
  `country`, `region`) take strings only. Id columns (`user_id`, `county`, `city`) take strings
  and integers (an integer `county` is zero-padded to 5 digits, since an integer cannot hold the
  FIPS code's leading zeros). `suppressions` takes integers only; `ts` strings or date-times.
  An integer is an integral number: JSON does not tell `2` from `2.0`, so both are integers and
  `2.5` is not. Booleans, lists, objects, and dates in any column other than `ts`, are rejected.
  Where the values come from tells their types: the frame's dtypes (Parquet, JSON read as a
  whole), a kind per value (`value_kinds`: JSON lines whose types differ), or nothing at all
  (`text_cells`: CSV, where every cell is text and an integer is written `[-]digits`, as in a
  query string: "2.0", "1e3", "1.5" and "true" are not integers). Parquet columns have one type
  each, so a Parquet column of the wrong type refuses the whole file (`check_column_types`).
  Surrounding whitespace is trimmed; an empty string is a null.
- `ts`: a datetime (naive = UTC, aware = converted to UTC) or an ISO 8601 string with date and
  time; a string without offset is taken as UTC, `Z` and `+hh:mm` offsets are honoured. Numbers
  are refused: epoch seconds and epoch milliseconds cannot be told apart reliably. A ts more
  than `MAX_FUTURE_SKEW` after `now` (the caller's clock) is rejected.
- `keyword`: `normalise.normalise_keyword`, then 1..100 characters and no control characters.
- `domain`: `normalise.normalise_domain`, then every label must be an RFC 1123 host name label
  (letters, digits, hyphens; Unicode labels must be IDNA-encodable), the last label must not be
  numeric (IP addresses are not domains), and the name is reduced to its registrable domain with
  the Public Suffix List bundled with `publicsuffixlist` (ICANN and private sections, unknown
  suffixes refused, never fetched from the network): "old.reddit.com" -> "reddit.com".
- `platform`, `page_context`, `action`: trimmed, lowercased, one of the values in `schema`.
- `country`: uppercased ISO 3166-1 alpha-2. `region`: uppercased ISO 3166-2 of that country.
  `county`: 5-digit FIPS of a known US county, of country US (or of the outlying area's own
  code, e.g. PR), and of the row's region when one is given. `city`: a GeoNames id known to
  `service.geo`, in the row's country, and in the row's region where that is derivable (US).
- `suppressions`: an integer from 1 to 2**31 - 1.
- `user_id`: any non-empty text; stored only as `hash_user_ids` (keyed BLAKE2b, 64 bits).

The work is vectorised with polars; Python runs once per distinct value where a rule needs it
(keyword/domain normalisation, hashing, unusual timestamp spellings). The columns' checks run side
by side, each in a thread (`_Rows.run`: polars releases the GIL), and their reasons are joined in
one fixed order.

The type rules are in `kinds.py`, the file-level checks in `columns.py`, the domain rule in
`domains.py`, the hashing of user ids in `user_ids.py`.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import functools
import os
from collections.abc import Callable, Mapping, Sequence

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from service import geo
from service.store import schema
from service.store.columns import check_columns
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
from service.store.user_ids import hash_user_ids

UTC = dt.UTC
MAX_FUTURE_SKEW = dt.timedelta(minutes=5)
SUPPRESSIONS_MAX = 2**31 - 1  # stored as Int32
REJECTED_SCHEMA: dict[str, pl.DataType] = {"row_number": pl.Int64(), "reason": pl.String(), "row": pl.String()}

_DISTINCT_FROM = 10_000  # rows from which a rule that reads few distinct values runs once per value
_SHOWN_CHARS = 40  # longer values are cut in reasons so one bad row cannot flood the quarantine
_CONTROL = r"[\x00-\x1f\x7f-\x9f]"


def _shown(expr: pl.Expr) -> pl.Expr:
    """A value quoted for a reason, cut to a readable length."""
    cut = (
        pl.when(expr.str.len_chars() > _SHOWN_CHARS)
        .then(pl.concat_str([expr.str.head(_SHOWN_CHARS - 1), pl.lit("…")]))
        .otherwise(expr)
    )
    return pl.concat_str([pl.lit("'"), cut, pl.lit("'")])


def _parse_iso(text: str) -> dt.datetime | None:
    """Python's ISO 8601 reader, for spellings polars' two fast formats do not cover."""
    if len(text) <= 10:  # a bare date is not a timestamp
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


# The usual spelling: date, "T", time to the second with up to 6 decimals, "Z" or an offset.
_USUAL_ISO = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$"


def _parse_usual_iso(text: pl.Series) -> pl.Series | None:
    """Every value of a column in the usual spelling, by Arrow's ISO 8601 cast (several times as
    fast as polars' formats, and the same instants: a test compares them); None when a value is
    spelt otherwise or is no valid instant (Feb 30, second 60), for the readers of `_parse_ts`."""
    if text.null_count() == text.len() or not text.str.contains(_USUAL_ISO).fill_null(True).all():
        return None
    try:
        return pl.Series("ts", pc.cast(text.to_arrow(), pa.timestamp("us", tz="UTC")))
    except pa.ArrowInvalid:
        return None


def _parse_ts(series: pl.Series, kinds: pl.Series | None = None) -> tuple[pl.Series, pl.Series, BadKinds]:
    """(parsed UTC timestamps, text as given for messages, kinds of values that are no timestamp)."""
    dtype = series.dtype
    if isinstance(dtype, pl.Datetime):
        moment = series.dt.replace_time_zone("UTC") if dtype.time_zone is None else series.dt.convert_time_zone("UTC")
        return moment.cast(schema.TS), series.cast(pl.String), None
    text, bad = as_text(series, frozenset({STRING}), kinds=kinds)
    if isinstance(bad, str):
        return pl.Series("ts", [None] * series.len(), dtype=schema.TS), text, bad
    candidates = text if bad is None else pl.select(pl.when(bad.is_null()).then(text)).to_series()
    # A space or "t" may replace the "T"; the usual file has "T" everywhere (no rewrite then).
    if (candidates.str.slice(10, 1) != "T").any():
        uniform = candidates.str.replace(r"^(\d{4}-\d{2}-\d{2})[ t]", "${1}T")
    else:
        uniform = candidates
    parsed = _parse_usual_iso(uniform)
    if parsed is not None:
        return parsed.cast(schema.TS).rename("ts"), text, bad
    # Formats tried in turn, each only on what the ones before could not read: "Z" (the usual
    # spelling, and the cheapest), any offset, no offset (UTC); then Python's reader.
    parsed = uniform.str.to_datetime("%Y-%m-%dT%H:%M:%S%.fZ", time_unit="us", time_zone="UTC", strict=False)
    for fmt in ("%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f"):
        missing = parsed.is_null() & uniform.is_not_null()
        if not missing.any():
            break
        more = uniform.filter(missing).str.to_datetime(fmt, time_unit="us", time_zone="UTC", strict=False)
        parsed = parsed.scatter(missing.arg_true(), more)
    leftover = uniform.filter(parsed.is_null() & uniform.is_not_null())
    if leftover.len():
        slow = map_distinct(uniform.filter(parsed.is_null()), _parse_iso, schema.TS)
        parsed = parsed.scatter(parsed.is_null().arg_true(), slow)
    return parsed.cast(schema.TS).rename("ts"), text, bad


def validate_rows(
    frame: pl.DataFrame,
    table: str,
    *,
    now: dt.datetime,
    secret: str,
    row_numbers: pl.Series | None = None,
    source_rows: pl.Series | None = None,
    text_cells: bool = False,
    value_kinds: Mapping[str, pl.Series] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split raw rows into (good rows in the stored schema, rejected rows).

    `row_numbers` are the 1-based positions of the rows in their source (default 1..n);
    `source_rows` the original text of each row as JSON (default: the row encoded as a JSON
    object). Rejected rows come back as `row_number`, `reason`, `row` (JSON text), in input order.

    Types (module docstring): by default a value's type is its column's dtype, a float being an
    integer where it is integral (JSON numbers). `value_kinds` gives, for columns whose values
    differ in type, the kind of each value (one of `JSON_KINDS`, null for a null) while the
    column holds the values as text. `text_cells` says every cell is text (CSV).
    Raises ContractError when the columns do not fit the table.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    check_columns(table, frame.columns)
    n = frame.height
    if row_numbers is None:
        row_numbers = pl.Series("row_number", range(1, n + 1), dtype=pl.Int64)
    if row_numbers.len() != n or (source_rows is not None and source_rows.len() != n):
        raise ValueError("row_numbers and source_rows must have one entry per row")
    kinds = dict(value_kinds or {})
    if any(series.len() != n for series in kinds.values()):
        raise ValueError("value_kinds must have one entry per row")

    rows = _Rows(frame, table, text_cells=text_cells, kinds=kinds)
    checks: list[Callable[[_Rows], object]] = [
        lambda r: r.check_ts(now),
        lambda r: r.check_user_id(secret),
        _Rows.check_keyword,
        lambda r: r.check_enum("platform", schema.PLATFORMS),
    ]
    if table == schema.SUPPRESSIONS:
        checks += [lambda r: r.check_enum("page_context", schema.PAGE_CONTEXTS), _Rows.check_domain,
                   _Rows.check_geography, _Rows.check_count]
    else:
        checks += [lambda r: r.check_enum("action", schema.ACTIONS), _Rows.check_country]
    rows.run(checks)

    work = rows.work_frame()
    reason = work.select(pl.concat_str(rows.reasons, separator="; ", ignore_nulls=True)).to_series()
    ok = reason == ""
    passed = work.filter(ok)
    good = passed.select(
        [
            pl.col("user_id__hashed").alias("user_id") if name == "user_id" else pl.col(name).cast(dtype)
            for name, dtype in schema.SCHEMAS[table].items()
        ]
    )
    bad = ok.not_()
    rejected = pl.DataFrame(
        {
            "row_number": row_numbers.filter(bad).cast(pl.Int64),
            "reason": reason.filter(bad),
            # A source row may still end with its line end (NDJSON read whole): cut it off here,
            # for the rejected rows only.
            "row": source_rows.filter(bad).cast(pl.String).str.strip_chars_end("\r\n")
            if source_rows is not None
            else _rows_as_json(frame.filter(bad)),
        },
        schema=REJECTED_SCHEMA,
    )
    return good, rejected


class _Rows:
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

    def run(self, checks: Sequence[Callable[[_Rows], object]]) -> None:
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

    def _fork(self) -> _Rows:
        return _Rows(self.frame, self.table, text_cells=self.text_cells, kinds=self.kinds)

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
        ts, text, bad = _parse_ts(self.frame["ts"], self.kinds.get("ts"))
        self.columns["ts"], self.columns["ts__raw"] = ts, text
        self.note_bad("ts", bad)
        limit = now.astimezone(UTC) + MAX_FUTURE_SKEW
        self.add(
            self.presence("ts", required=True),
            pl.when(pl.col("ts").is_null())
            .then(pl.format("ts: {} is not an ISO 8601 timestamp", _shown(pl.col("ts__raw"))))
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
                pl.format(f"{name}: {{}} is not one of {', '.join(allowed)}", _shown(pl.col(f"{name}__raw")))
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
                pl.format("domain: {} {}", _shown(pl.col("domain__raw")), pl.col("domain__problem"))
            ),
        )

    def check_country(self) -> pl.Expr:
        """Country rule; returns the expression "country is valid" for the geography rules."""
        self.columns["country"] = self.text("country").str.to_uppercase()
        country_ok = pl.col("country").is_in(sorted(geo.country_codes()))
        self.add(
            self.presence("country", required=True),
            pl.when(country_ok.not_()).then(
                pl.format("country: {} is not an ISO 3166-1 alpha-2 country code", _shown(pl.col("country__raw")))
            ),
        )
        return country_ok

    def check_geography(self) -> None:
        """country, region, county and city: valid keys that agree with each other.

        The rules read nothing but these four values, and a file holds few combinations of them
        (places), each on many rows: the rules run once per combination and the outcome (clean
        values, reasons) is joined back onto the rows. Not when a column mixes kinds of values
        (`value_kinds`: their kinds are per row), nor when combinations are not repeated."""
        names = [name for name in schema.GEO_LEVELS if name in self.frame.columns]
        if self.n < _DISTINCT_FROM or any(name in self.kinds for name in names):
            return self._check_geography_rows()
        places = self.frame.select(names).unique()
        if places.height * 4 > self.n:
            return self._check_geography_rows()
        per_place = _Rows(places, self.table, text_cells=self.text_cells, kinds={})
        per_place._check_geography_rows()
        work = per_place.work_frame()
        reason = pl.concat_str(per_place.reasons, separator="; ", ignore_nulls=True)
        outcome = work.select(
            *(pl.col(name).alias(f"{name}__clean") for name in schema.GEO_LEVELS),
            pl.when(reason != "").then(reason).alias("geo__reason"),
        ).with_columns(places)
        joined = self.frame.select(names).join(outcome, on=names, how="left", nulls_equal=True, maintain_order="left")
        for name in schema.GEO_LEVELS:
            self.columns[name] = joined.get_column(f"{name}__clean").rename(name)
        self.columns["geo__reason"] = joined.get_column("geo__reason")
        self.add(pl.col("geo__reason"))

    def _check_geography_rows(self) -> None:
        country_ok = self.check_country()
        country = pl.col("country")

        region_raw = self.text("region")
        self.columns["region"] = region_text = region_raw.str.to_uppercase()
        self.columns["region__country"] = _lookup(region_text, "region_countries")
        region, region_country = pl.col("region"), pl.col("region__country")
        region_ok = region.is_not_null() & region_country.is_not_null()
        self.add(
            self.presence("region", required=False),
            pl.when(region.is_not_null() & region_country.is_null())
            .then(pl.format("region: {} is not an ISO 3166-2 code", _shown(pl.col("region__raw"))))
            .when(region_ok & country_ok & (region_country != country))
            .then(pl.format("region: '{}' is not in country '{}'", region, country)),
        )

        county_raw = self.text("county", zero_pad=5)
        self.columns["county"] = county_raw
        self.columns["county__region"] = _lookup(county_raw, "county_regions")
        self.columns["county__home"] = _lookup(county_raw, "county_countries")
        self.columns["county__label"] = map_distinct(county_raw, lambda key: geo.label("county", key), pl.String())
        county, county_region, county_label = pl.col("county"), pl.col("county__region"), pl.col("county__label")
        county_ok = county.is_not_null() & county_region.is_not_null()
        self.add(
            self.presence("county", required=False),
            pl.when(county.is_not_null() & county.str.contains(r"^\d{5}$").not_())
            .then(pl.format("county: {} is not a 5-digit FIPS code", _shown(pl.col("county__raw"))))
            .when(county.is_not_null() & county_region.is_null())
            .then(pl.format("county: {} is not a known US county FIPS code", _shown(county)))
            .when(county_ok & country_ok & (country != "US") & (country != pl.col("county__home")))
            .then(pl.format("county: '{}' ({}) is a US county, but country is '{}'", county, county_label, country))
            .when(county_ok & region_ok & (county_region != region))
            .then(pl.format("county: '{}' ({}) is not in region '{}'", county, county_label, region)),
        )

        city_raw = self.text("city")
        self.columns["city"] = city_raw
        self.columns["city__country"] = _lookup(city_raw, "city_countries")
        self.columns["city__region"] = _lookup(city_raw, "city_regions")
        self.columns["city__label"] = map_distinct(city_raw, lambda key: geo.label("city", key), pl.String())
        city, city_country, city_region, city_label = (
            pl.col("city"),
            pl.col("city__country"),
            pl.col("city__region"),
            pl.col("city__label"),
        )
        city_ok = city.is_not_null() & city_country.is_not_null()
        self.add(
            self.presence("city", required=False),
            pl.when(city.is_not_null() & city.str.contains(r"^\d+$").not_())
            .then(pl.format("city: {} is not a GeoNames id", _shown(pl.col("city__raw"))))
            .when(city.is_not_null() & city_country.is_null())
            .then(
                pl.format(
                    "city: {} is not a known GeoNames city (population of at least {})",
                    _shown(city),
                    pl.lit(geo.CITY_MIN_POPULATION),
                )
            )
            .when(city_ok & country_ok & (city_country != country))
            .then(pl.format("city: '{}' ({}) is not in country '{}'", city, city_label, country))
            .when(city_ok & region_ok & city_region.is_not_null() & (city_region != region))
            .then(pl.format("city: '{}' ({}) is not in region '{}'", city, city_label, region)),
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
        kind, count, shown = pl.col("suppressions__kind"), pl.col("suppressions"), _shown(pl.col("suppressions__raw"))
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


@functools.cache
def _mapping(name: str) -> tuple[pl.Series, pl.Series]:
    """A `service.geo` lookup (a mapping of text to text) as key and value Series, built once: a
    dict given to `replace_strict` is turned into Series on every call (30,000 cities: 30 ms)."""
    mapping = getattr(geo, name)()
    return (pl.Series(list(mapping.keys()), dtype=pl.String),
            pl.Series(list(mapping.values()), dtype=pl.String))


def _lookup(values: pl.Series, name: str) -> pl.Series:
    """Each value's entry in the `service.geo` lookup `name` (null where none); a column of nulls
    (an optional column absent, the usual case for `city`) is not looked up at all."""
    if values.null_count() == values.len():
        return pl.Series(values.name, [None] * values.len(), dtype=pl.String)
    keys, mapped = _mapping(name)
    return values.replace_strict(keys, mapped, default=None, return_dtype=pl.String)


def _rows_as_json(frame: pl.DataFrame) -> pl.Series:
    if frame.width == 0:
        return pl.Series("row", ["{}"] * frame.height, dtype=pl.String)
    try:
        return frame.select(pl.struct(pl.all()).struct.json_encode()).to_series()
    except pl.exceptions.PolarsError:
        # Some dtypes (binary, objects) have no JSON form; show them as text instead.
        as_text = frame.select(pl.all().cast(pl.String, strict=False))
        return as_text.select(pl.struct(pl.all()).struct.json_encode()).to_series()
