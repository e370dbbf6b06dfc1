"""Reading CSV (UTF-8, header row, RFC 4180 quoting) into a raw frame of text cells: polars for a
plainly regular file, Python's csv module record by record for anything else, so that a record with
the wrong number of fields or invalid UTF-8 is rejected and the others are kept.
"""

from __future__ import annotations

import csv
import io
import json

import polars as pl

from service.store.raw_files import FileError, RawFile, first_row_numbers, no_rejects, reject_frame, row_number_series


def read_csv(data: bytes) -> RawFile:
    # polars is fast but lenient: it pads short records with nulls and turns blank lines into
    # empty rows. It is used only when the file is plainly regular (no quoting, no blank lines,
    # the same number of separators on every line); anything else goes through Python's csv
    # module, which checks each record.
    if _plain_csv(data):
        try:
            frame = pl.read_csv(io.BytesIO(data), infer_schema=False)
            return RawFile(frame, first_row_numbers(frame.height), None, no_rejects(), text_cells=True)
        except pl.exceptions.PolarsError:
            pass
    return _read_csv_by_record(data)


def _plain_csv(data: bytes) -> bool:
    if b'"' in data or b"\r" in data.replace(b"\r\n", b""):
        return False
    body = data.replace(b"\r\n", b"\n").rstrip(b"\n")
    if not body or b"\n\n" in body:
        return False
    header_fields = body.split(b"\n", 1)[0].count(b",") + 1
    lines = body.count(b"\n") + 1
    return body.count(b",") == (header_fields - 1) * lines


def _read_csv_by_record(data: bytes) -> RawFile:
    """The slow path for a CSV polars refused: Python's csv module, one record at a time."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # surrogateescape keeps undecodable bytes visible, so only the records holding them fail.
    reader = csv.reader(io.StringIO(data.decode("utf-8", "surrogateescape"), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return RawFile(pl.DataFrame(), row_number_series([]), None, no_rejects())
    except csv.Error as exc:
        raise FileError(f"unreadable CSV header: {exc}") from None
    if _has_surrogates(header):
        raise FileError("the CSV header is not valid UTF-8")
    if len(set(header)) != len(header):
        raise FileError(f"the CSV header repeats a column name: {', '.join(header)}")
    rows: list[list[str | None]] = []
    numbers: list[int] = []
    rejects: list[tuple[int, str, str]] = []
    number = 0
    while True:
        number += 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            rejects.append((number, f"malformed CSV record: {exc}", json.dumps(None)))
            continue
        if not record:  # a blank line is not a record
            number -= 1
            continue
        if _has_surrogates(record):
            shown = [field.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for field in record]
            rejects.append((number, "record is not valid UTF-8", json.dumps(shown, ensure_ascii=False)))
            continue
        if len(record) != len(header):
            rejects.append(
                (number, f"expected {len(header)} fields, found {len(record)}", json.dumps(record, ensure_ascii=False))
            )
            continue
        rows.append([field if field != "" else None for field in record])
        numbers.append(number)
    frame = pl.DataFrame(rows, schema=dict.fromkeys(header, pl.String), orient="row")
    return RawFile(frame, row_number_series(numbers), None, reject_frame(rejects), text_cells=True)


def _has_surrogates(fields: list[str]) -> bool:
    return any(not field.isascii() and any("\udc80" <= ch <= "\udcff" for ch in field) for field in fields)
