"""Paging of the ranked answers: the row total and the link to the next page (RFC 8288).

Every ranked answer (/top-keywords, /trending, /keyword-activity, POST /query) is a page of one
full answer: its rows `offset` to `offset + limit` in the answer's order. The response says how
many rows the full answer holds (`Signals-Total-Rows`) and, when rows follow, where the next page
is (`Link: <...>; rel="next"`). A GET's next page is the same URL with `offset` and the answer's
`as_of`; POST /query's is `/query?cursor=...`, to which the client posts the same body: the cursor
holds the offset and the as_of, and a fingerprint of the query it was issued for. Pinning the
as_of keeps every page a slice of the same answer when the hour turns between two pages; the
privacy noise of a number depends on the cell it counts, never on the page, so a row's numbers
are the same in every page and in the un-paged answer.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import functools
import hashlib
import json
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from paramcheck import FieldError
from service.api.windows import iso_z

TOTAL_HEADER = "Signals-Total-Rows"
CURSOR = "cursor"
OFFSET = "offset"
MAX_OFFSET = 1_000_000_000
# What the API publishes about paging beside the body, for the OpenAPI document and the clients.
TOTAL_DESCRIPTION = ("The number of rows the full answer holds (every published row, before `limit` and "
                     "`offset` cut this page from it); more than the rows of this page when the answer is cut.")
LINK_DESCRIPTION = ('RFC 8288: `<...>; rel="next"`, the URL of the next page, present only when rows follow this '
                    'page. It pins the answer\'s as_of, so that every page is a slice of the same answer.')


class CursorError(ValueError):
    """A cursor that this API did not issue for this query."""


def fingerprint(request: Any) -> str:
    """What a POST /query cursor is issued for: the request apart from its page."""
    canonical = json.dumps(dataclasses.asdict(dataclasses.replace(request, offset=0)), sort_keys=True,
                           separators=(",", ":"), default=list)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def make_cursor(offset: int, as_of: dt.datetime, request: Any) -> str:
    raw = json.dumps({"o": offset, "a": iso_z(as_of), "q": fingerprint(request)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@dataclasses.dataclass(frozen=True)
class Cursor:
    offset: int
    as_of: str
    query: str


def read_cursor(text: str) -> Cursor:
    """The cursor's offset, as_of and query fingerprint; CursorError when it is not one this API issued."""
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        cursor = Cursor(offset=data["o"], as_of=data["a"], query=data["q"])
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise CursorError("is not a cursor this API issued: post to the URL of the previous page's "
                          'Link rel="next" header, unchanged') from None
    if (not isinstance(cursor.offset, int) or isinstance(cursor.offset, bool) or not 0 <= cursor.offset <= MAX_OFFSET
            or not isinstance(cursor.as_of, str) or not isinstance(cursor.query, str)):
        raise CursorError("is not a cursor this API issued: post to the URL of the previous page's "
                          'Link rel="next" header, unchanged')
    return cursor


def cursor_errors(cursor: Cursor, request: Any) -> list[FieldError]:
    if cursor.query != fingerprint(request):
        return [FieldError(CURSOR, "was issued for another query: post the same body as for the previous page")]
    return []


def next_offset(request: Any, total: int | None) -> int | None:
    """The offset of the page after this one, or None when this page ends the answer (or the
    answer is not paged: no `limit`)."""
    limit = getattr(request, "limit", None)
    if limit is None or total is None:
        return None
    following = getattr(request, "offset", 0) + limit
    return following if following < total else None


def next_link(path: str, query_string: str, request: Any, as_of: dt.datetime, total: int | None,
              in_body: bool) -> str | None:
    """The Link header's value for the next page, or None."""
    following = next_offset(request, total)
    if following is None:
        return None
    if in_body:
        target = f"{path}?{CURSOR}={quote(make_cursor(following, as_of, request), safe='')}"
        return f'<{target}>; rel="next"'
    return _get_link(path, query_string, following, as_of)


@functools.lru_cache(maxsize=1024)
def _get_link(path: str, query_string: str, following: int, as_of: dt.datetime) -> str:
    """A GET's next page: its URL with `offset` and `as_of` set. Remembered: every cached answer
    asked again with the same query string in the same hour has the same link, and building it
    (parse, quote, join) cost more than the rest of a cached answer's headers."""
    kept = [(name, value) for name, value in parse_qsl(query_string, keep_blank_values=True)
            if name not in (OFFSET, "as_of")]
    target = f"{path}?{urlencode([*kept, (OFFSET, str(following)), ('as_of', iso_z(as_of))])}"
    return f'<{target}>; rel="next"'


def page_headers(path: str, query_string: str, request: Any, as_of: dt.datetime, total: int | None,
                 in_body: bool) -> list[tuple[str, str]]:
    """Signals-Total-Rows and, when rows follow, Link: what a response says of the rows it left out."""
    if total is None:  # an answer stored by an earlier version, without its total
        return []
    headers = [(TOTAL_HEADER, str(total))]
    link = next_link(path, query_string, request, as_of, total, in_body)
    if link is not None:
        headers.append(("Link", link))
    return headers
