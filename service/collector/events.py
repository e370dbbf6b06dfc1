"""A request body of events, checked by the ingest contract: which lines are accepted, which are
rejected and why.

A body is NDJSON, one event per line: `event_id` (the client's id, 1 to 64 characters of text),
`type` (`suppression` or `keyword_change`) and the columns of that event's table exactly as the
file contract defines them (docs/data.md "The contract"). The lines are read by the file reader
(`ndjson.read_ndjson`: the whole body at once when each field holds one JSON type, line by line
otherwise, each value keeping its JSON type) and each table's lines are checked by the file
validator (`validate.validate_rows`), so a value the file ingest would refuse is refused here with
the same reason. What differs from a file, per line rather than per file:

- a field that is not one of the event's table's columns rejects that line ("unknown field ...")
  where a file with an unknown column is refused whole; a missing required field is "<column>:
  missing" for that line;
- `event_id` and `type` are checked (their reasons come first);
- an event whose `ts` is more than `late_hours` before `now` is rejected (too late to land);
- a second line with an `event_id` already accepted earlier in the same body is a duplicate.

Line numbers are 1-based, blank lines counted. The accepted rows come out in the stored schema
(the user id already hashed) with their `event_id` first, one frame per table.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import polars as pl

from service.store import schema
from service.store.kinds import STRING, as_text, described
from service.store.ndjson import read_ndjson
from service.store.validate import validate_rows

EVENT_ID_MAX_CHARS = 64
TYPES = {"suppression": schema.SUPPRESSIONS, "keyword_change": schema.KEYWORD_CHANGES}
EVENT_FIELDS = ("event_id", "type")
_ALL_COLUMNS = set(EVENT_FIELDS) | set(schema.SUPPRESSIONS_SCHEMA) | set(schema.KEYWORD_CHANGES_SCHEMA)


@dataclasses.dataclass
class CheckedBody:
    """What became of a body's lines."""

    frames: dict[str, pl.DataFrame]  # table -> accepted rows: event_id, then the stored schema
    rejected: pl.DataFrame  # line (Int64), reason (String), in line order
    duplicates: int = 0  # lines whose event_id an earlier line of the body already had
    lines: int = 0  # non-blank lines

    @property
    def accepted(self) -> int:
        return sum(frame.height for frame in self.frames.values())

    def event_ids(self) -> pl.Series:
        parts = [frame.get_column("event_id") for frame in self.frames.values() if frame.height]
        return pl.concat(parts) if parts else pl.Series("event_id", [], dtype=pl.String)

    def without(self, ids: set[str]) -> int:
        """Drop the accepted events whose ids are in `ids` (duplicates of earlier bodies); how many."""
        dropped = 0
        if not ids:
            return 0
        for table, frame in list(self.frames.items()):
            keep = frame.get_column("event_id").is_in(list(ids)).not_()
            dropped += frame.height - int(keep.sum())
            self.frames[table] = frame.filter(keep)
        self.duplicates += dropped
        return dropped


def empty_frame(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema={"event_id": pl.String(), **schema.SCHEMAS[table]})


def check_body(body: bytes, *, now: dt.datetime, secret: str, late_hours: int) -> CheckedBody:
    """Split a body's lines into accepted rows per table and rejected lines (see the module docstring)."""
    read = read_ndjson(body)
    rejected = [read.unparsed.select(pl.col("row_number").alias("line"), "reason")]
    frames = {table: empty_frame(table) for table in schema.TABLES}
    lines = read.row_numbers.len() + read.unparsed.height
    frame = read.frame
    if not frame.width or not frame.height:
        return CheckedBody(frames, _sorted(rejected), lines=lines)
    numbers = read.row_numbers.cast(pl.Int64)
    kinds = read.value_kinds

    # event_id and type, then fields the event's table does not have: a reason each (or null).
    id_text, id_bad = _text(frame, "event_id", kinds)
    type_text, type_bad = _text(frame, "type", kinds)
    table_of = type_text.replace_strict(TYPES, default=None, return_dtype=pl.String)
    work = pl.DataFrame({"event_id": id_text, "type": type_text, "table": table_of,
                         "id_bad": id_bad, "type_bad": type_bad})
    reasons: list[pl.Expr] = [
        pl.when(pl.col("id_bad").is_not_null()).then(pl.format("event_id: expected text, got {}", pl.col("id_bad")))
        .when(pl.col("event_id").is_null()).then(pl.lit("event_id: missing"))
        .when(pl.col("event_id").str.len_chars() > EVENT_ID_MAX_CHARS)
        .then(pl.format("event_id: {} characters, at most {} allowed", pl.col("event_id").str.len_chars(),
                        pl.lit(EVENT_ID_MAX_CHARS))),
        pl.when(pl.col("type_bad").is_not_null()).then(pl.format("type: expected text, got {}", pl.col("type_bad")))
        .when(pl.col("type").is_null()).then(pl.lit("type: missing (suppression or keyword_change)"))
        .when(pl.col("table").is_null())
        .then(pl.format("type: '{}' is not one of suppression, keyword_change", pl.col("type").str.head(40))),
    ]
    unknown_columns = [name for name in frame.columns if name not in _ALL_COLUMNS]
    for name in frame.columns:
        if name in EVENT_FIELDS:
            continue
        given = frame.get_column(name).is_not_null()
        if name in unknown_columns:
            reasons.append(pl.when(given).then(pl.lit(f"unknown field {name!r}")))
            continue
        for event_type, table in TYPES.items():
            if name not in schema.SCHEMAS[table]:
                reasons.append(pl.when(given & (pl.col("table") == table))
                               .then(pl.lit(f"{name!r} is not a field of a {event_type} event")))
    event_reason = work.select(pl.concat_str(reasons, separator="; ", ignore_nulls=True)).to_series()
    event_reason = pl.select(pl.when(event_reason != "").then(event_reason)).to_series()

    no_table = table_of.is_null()
    if no_table.any():
        rejected.append(pl.DataFrame({"line": numbers.filter(no_table), "reason": event_reason.filter(no_table)}))
    earliest = now.astimezone(dt.UTC) - dt.timedelta(hours=late_hours)
    for table in schema.TABLES:
        mine = table_of == table
        if not mine.any():
            continue
        columns = schema.SCHEMAS[table]
        sub = frame.filter(mine).select(
            [pl.col(c) if c in frame.columns else pl.lit(None, dtype=pl.String).alias(c) for c in columns])
        sub_kinds = {c: kinds[c].filter(mine) for c in columns if c in kinds}
        sub_numbers = numbers.filter(mine)
        good, bad = validate_rows(sub, table, now=now, secret=secret, row_numbers=sub_numbers,
                                  source_rows=None, value_kinds=sub_kinds)
        # The rows validate_rows kept, in order: those whose numbers it did not reject.
        kept = sub_numbers.is_in(bad.get_column("row_number")).not_()
        before = event_reason.filter(mine)
        good_reason = before.filter(kept)
        late = good.get_column("ts") < pl.lit(earliest).cast(schema.TS)
        late_reason = pl.select(pl.when(late).then(pl.format(
            "ts: {} is older than the lateness window ({} hours before {}, SIGNALS_LATE_HOURS)",
            good.get_column("ts").dt.strftime("%Y-%m-%dT%H:%M:%SZ"), pl.lit(late_hours),
            pl.lit(now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))))).to_series()
        good_reason = pl.select(pl.concat_str([good_reason, late_reason], separator="; ", ignore_nulls=True)
                                ).to_series()
        good_reason = pl.select(pl.when(good_reason != "").then(good_reason)).to_series()
        ok = good_reason.is_null()
        bad_before = before.filter(kept.not_())
        bad_reason = pl.select(pl.concat_str([bad_before, bad.get_column("reason")], separator="; ",
                                             ignore_nulls=True)).to_series()
        rejected.append(pl.DataFrame({"line": bad.get_column("row_number"), "reason": bad_reason}))
        if not ok.all():
            rejected.append(pl.DataFrame({"line": sub_numbers.filter(kept).filter(ok.not_()),
                                          "reason": good_reason.filter(ok.not_())}))
        ids = id_text.filter(mine).filter(kept).filter(ok)
        frames[table] = good.filter(ok).insert_column(0, ids.rename("event_id"))
    checked = CheckedBody(frames, _sorted(rejected), lines=lines)
    _drop_repeats(checked, numbers, id_text, table_of)
    return checked


def _text(frame: pl.DataFrame, name: str, kinds: dict[str, pl.Series]) -> tuple[pl.Series, pl.Series]:
    """(the field as text, null where absent; a description of a value that is not text, else null)."""
    n = frame.height
    if name not in frame.columns:
        return pl.Series(name, [None] * n, dtype=pl.String), pl.Series([None] * n, dtype=pl.String)
    text, bad = as_text(frame.get_column(name), frozenset({STRING}), kinds=kinds.get(name))
    if bad is None:
        bad_series = pl.Series([None] * n, dtype=pl.String)
    elif isinstance(bad, str):
        bad_series = pl.select(pl.when(frame.get_column(name).is_not_null()).then(pl.lit(described(bad)))).to_series()
    else:
        bad_series = bad.replace_strict({k: described(k) for k in bad.drop_nulls().unique().to_list()},
                                        default=None, return_dtype=pl.String)
    return text, bad_series


def _drop_repeats(checked: CheckedBody, numbers: pl.Series, ids: pl.Series, tables: pl.Series) -> None:
    """A second accepted line with an event_id an earlier accepted line has: a duplicate, dropped."""
    accepted = pl.concat([frame.get_column("event_id") for frame in checked.frames.values()])
    if accepted.len() == accepted.n_unique():
        return
    rejected_lines = checked.rejected.get_column("line")
    lines = pl.DataFrame({"line": numbers, "event_id": ids, "table": tables}).filter(
        pl.col("line").is_in(rejected_lines).not_() & pl.col("table").is_not_null())
    first = lines.filter(pl.col("event_id").is_first_distinct())
    for table, frame in checked.frames.items():
        if not frame.height:
            continue
        mine = lines.filter(pl.col("table") == table)  # the frame's rows, in order
        keep = mine.get_column("line").is_in(first.get_column("line"))
        checked.duplicates += frame.height - int(keep.sum())
        checked.frames[table] = frame.filter(keep)


def _sorted(parts: list[pl.DataFrame]) -> pl.DataFrame:
    schema_ = {"line": pl.Int64(), "reason": pl.String()}
    frames = [part.select(pl.col("line").cast(pl.Int64), pl.col("reason").cast(pl.String)) for part in parts
              if part.height]
    if not frames:
        return pl.DataFrame(schema=schema_)
    return pl.concat(frames).sort("line")

