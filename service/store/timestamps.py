"""The ingest contract's timestamps: `parse_ts` reads a `ts` column, whatever its type, as UTC
instants (the rule: docs/data.md, "The contract"). A datetime column is converted; text in the usual
spelling goes through Arrow's ISO 8601 cast, other spellings through polars' formats, then Python's
reader (once per distinct value)."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from service.store import schema
from service.store.kinds import STRING, BadKinds, as_text, map_distinct

UTC = dt.UTC


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
    spelt otherwise or is no valid instant (Feb 30, second 60), for the readers of `parse_ts`."""
    if text.null_count() == text.len() or not text.str.contains(_USUAL_ISO).fill_null(True).all():
        return None
    try:
        return pl.Series("ts", pc.cast(text.to_arrow(), pa.timestamp("us", tz="UTC")))
    except pa.ArrowInvalid:
        return None


def parse_ts(series: pl.Series, kinds: pl.Series | None = None) -> tuple[pl.Series, pl.Series, BadKinds]:
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
