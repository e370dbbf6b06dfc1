"""Reading NDJSON (`.ndjson`/`.jsonl`, one JSON object per line) into a raw frame, keeping each
value's JSON type for the contract (formats.py's docstring: how the formats are read).

The whole file is read at once (pyarrow) when every column holds one JSON type; its columns then
carry the types. Otherwise (types differ between lines, or a line is broken) each line is read on
its own and the kind of every value is kept next to it, so a `true` among strings is still a
boolean when the contract sees it. A broken line is rejected with its line number; its neighbours
are kept. The collector (service/collector/events.py) reads request bodies with `read_ndjson` too.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
from collections.abc import Iterator, Sequence
from typing import cast

import polars as pl
import pyarrow as pa
import pyarrow.json as pa_json

from service.store.kinds import BOOLEAN, INTEGER, LIST, NUMBER, OBJECT, STRING
from service.store.raw_files import RawFile, first_row_numbers, no_rejects, reject_frame, row_number_series


def read_ndjson(data: bytes) -> RawFile:
    fast = read_ndjson_plain(data)
    if fast is not None:
        return fast
    lines = data.split(b"\n")
    # Line numbers of the non-blank lines; blank lines are skipped, so this keeps both aligned.
    numbers = [i for i, line in enumerate(lines, start=1) if line.strip()]
    texts = [lines[i - 1].rstrip(b"\r") for i in numbers]
    if not texts:
        return RawFile(pl.DataFrame(), row_number_series([]), None, no_rejects())
    joined_length = sum(map(len, texts)) + len(texts) - 1
    if numbers[-1] == len(numbers) and b"\r" not in data and not data[joined_length:].strip(b"\n"):
        whole = data  # no blank line before the last one, no CR: the file is already the lines joined
    else:
        whole = b"\n".join(texts)
    frame = _ndjson_whole(whole)
    del whole
    if frame is not None and frame.height == len(texts):
        source = pl.Series("row", texts, dtype=pl.Binary).cast(pl.String, strict=False)
        if source.null_count() == 0:
            return RawFile(frame, row_number_series(numbers), source, no_rejects())
    return _read_ndjson_by_line(numbers, texts)


_BLANK_CHARS = " \t\n\r\x0b\x0c"  # what bytes.strip() removes: a line of only these is blank


def read_ndjson_plain(data: bytes) -> RawFile | None:
    """The usual file, without a Python object per line: valid UTF-8, no CR, no blank line (but
    for a last line end), and every line read whole (`_ndjson_whole`). None for anything else:
    `read_ndjson` then does what it always did (the same result, more slowly).

    The lines are one Arrow string array over the file's own bytes (offsets at the line ends, so
    each value still ends with its "\n": cut off for the rejected rows only, by `validate_rows`)."""
    if not data or b"\r" in data or len(data) >= 2**32 - 1:  # (polars indexes rows with 32 bits)
        return None
    buffer = pa.py_buffer(data)
    octets = pl.Series(pa.Array.from_buffers(pa.uint8(), len(data), [None, buffer]))
    starts = (octets == 10).arg_true().cast(pl.Int64) + 1  # after each "\n"
    del octets
    tail = [] if data.endswith(b"\n") else [pl.Series([len(data)], dtype=pl.Int64)]
    # (built in polars: pyarrow's `pa.array` would import pandas, a third of a second)
    offsets = pl.concat([pl.Series([0], dtype=pl.Int64), starts, *tail]).rechunk().to_arrow()
    count = len(offsets) - 1
    # An Int64 array's values buffer is always there (only its validity buffer may be None).
    lines = pa.LargeStringArray.from_buffers(count, cast(pa.Buffer, offsets.buffers()[1]), buffer)
    try:
        lines.validate(full=True)  # UTF-8
    except pa.ArrowInvalid:
        return None
    source = pl.Series("row", lines)
    if (source.str.strip_chars(_BLANK_CHARS).str.len_bytes() == 0).any():
        return None
    frame = _ndjson_whole(data)
    if frame is None or frame.height != count:
        return None
    return RawFile(frame, first_row_numbers(count), source, no_rejects())


# `ts` is read as a string: pyarrow would otherwise turn ISO 8601 strings into naive timestamps
# (dropping offsets' meaning) before the contract could parse them itself.
_NDJSON_OPTIONS = pa_json.ParseOptions(
    explicit_schema=pa.schema([("ts", pa.string())]), unexpected_field_behavior="infer"
)


def _ndjson_whole(data: bytes) -> pl.DataFrame | None:
    """Every line at once, when each column holds values of one JSON type; else None.

    pyarrow's reader refuses a column whose JSON type changes between lines ("changed from
    string to boolean"), where polars would turn every value into a string; the refusal sends the
    file to the line-by-line reader, which keeps each value's type.
    """
    try:
        frame = pl.from_arrow(pa_json.read_json(io.BytesIO(data), parse_options=_NDJSON_OPTIONS))
    except (pa.ArrowException, pl.exceptions.PolarsError, ValueError):
        return None
    finally:
        pa.default_memory_pool().release_unused()  # the Arrow table is gone; give its memory back
    if not isinstance(frame, pl.DataFrame):
        return None
    for name, dtype in frame.schema.items():
        if dtype.is_temporal():
            return None  # a string column pyarrow took for times: read the strings as strings
        if dtype.is_float() and (frame[name].abs() >= 2.0**53).any():
            return None  # integers too large for a float (user ids): keep their digits exactly
    if frame["ts"].null_count() == frame.height:
        return None  # is `ts` absent (then the file is refused) or null in every row?
    return frame


def _read_ndjson_by_line(numbers: list[int], texts: list[bytes]) -> RawFile:
    """The slow path for a file that could not be read whole: each line on its own.

    Values are kept as Python parses them, column by column; a column whose values are all
    strings (or all integers) becomes a column of that type, and any other column holds each
    value as text (non-string scalars in their JSON spelling) with its kind kept beside it
    (`kinds.JSON_KINDS`), so lines whose types disagree still form one frame and the contract
    still sees each value's type.
    """
    records: list[dict[str, object]] = []
    kept_numbers: list[int] = []
    kept_texts: list[str] = []
    rejects: list[tuple[int, str, str]] = []
    first_keys: list[str] | None = None
    same_keys = True  # every object has the same keys in the same order (the usual export)
    with _no_gc():
        for number, raw in zip(numbers, texts, strict=True):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                rejects.append((number, "line is not valid UTF-8", json.dumps(raw.decode("utf-8", "replace"))))
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                rejects.append((number, f"invalid JSON: {exc.msg} at column {exc.colno}", json.dumps(text)))
                continue
            except RecursionError:
                rejects.append((number, "invalid JSON: nested too deeply", json.dumps(text[:200])))
                continue
            if not isinstance(value, dict):
                rejects.append((number, f"not a JSON object but {_json_kind(value)}", text))
                continue
            if "\\u" in text and _has_lone_surrogate(value):
                rejects.append((number, "invalid JSON: a string holds an unpaired UTF-16 surrogate", json.dumps(text)))
                continue
            if first_keys is None:
                first_keys = list(value)
            elif same_keys and list(value) != first_keys:
                same_keys = False
            records.append(value)
            kept_numbers.append(number)
            kept_texts.append(text)
        columns = _columns(records, first_keys or [], same_keys)
        del records
    rows = len(kept_numbers)
    frame_columns: dict[str, pl.Series] = {}
    kinds: dict[str, pl.Series] = {}
    for name in list(columns):
        values = columns.pop(name)  # freed column by column
        types = set(map(type, values))
        if types <= {str, type(None)}:  # the usual column: nothing but strings
            frame_columns[name] = pl.Series(name, values, dtype=pl.String)
        elif types <= {int, type(None)} and all(
                v is None or -(2**63) <= v < 2**63 for v in cast("Sequence[int | None]", values)):
            frame_columns[name] = pl.Series(name, values, dtype=pl.Int64)  # one type: the dtype says it
        else:  # mixed: text, with each value's kind beside it
            odd = [i for i, v in enumerate(values) if v is not None and type(v) is not str]
            texts_of = list(values)
            odd_kinds = []
            for i in odd:
                kind, texts_of[i] = _kind_and_text(values[i])
                odd_kinds.append(kind)
            column = frame_columns[name] = pl.Series(name, texts_of, dtype=pl.String)
            kinds[name] = (
                pl.select(pl.when(column.is_not_null()).then(pl.lit(STRING))).to_series().rename(name)
                .scatter(odd, pl.Series(odd_kinds, dtype=pl.String))
            )
        del values
    frame = pl.DataFrame(frame_columns) if frame_columns and rows else pl.DataFrame()
    source = pl.Series("row", kept_texts, dtype=pl.String)
    return RawFile(frame, row_number_series(kept_numbers), source, reject_frame(rejects), value_kinds=kinds if frame.width else {})


def _columns(records: list[dict[str, object]], keys: list[str], same_keys: bool) -> dict[str, Sequence[object]]:
    """The records' values column by column (None where a record lacks a key)."""
    if same_keys:  # transposed in C
        rows = zip(*map(dict.values, records), strict=True)
        return dict(zip(keys, rows, strict=True))
    columns: dict[str, list[object]] = {}
    for row, record in enumerate(records):
        for key, item in record.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = [None] * row  # a column first seen now: null before
            column.append(item)
        if len(record) != len(columns):  # keys this record lacks: null
            for column in columns.values():
                if len(column) <= row:
                    column.append(None)
    return dict(columns)  # as dict[str, Sequence] (dict is invariant): a copy of the keys, not of the lists


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Without the cyclic garbage collector: a million parsed lines are a million new dicts, and
    the collector would walk all of them again and again (a third of the time); none has cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _kind_and_text(value: object) -> tuple[str | None, str | None]:
    """(the kind of a parsed JSON value, its text: a string as is, other values in JSON)."""
    if value is None:
        return None, None
    if isinstance(value, str):
        return STRING, value
    if isinstance(value, bool):
        return BOOLEAN, "true" if value else "false"
    if isinstance(value, int):
        return INTEGER, str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return INTEGER, str(int(value))
        return NUMBER, repr(value)
    if isinstance(value, list):
        return LIST, json.dumps(value)
    return OBJECT, json.dumps(value)


def _has_lone_surrogate(value: object) -> bool:
    """Python's JSON reader accepts "\\ud800"; no UTF-8 text (nor polars) can hold it."""
    if isinstance(value, str):
        return not value.isascii() and any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
