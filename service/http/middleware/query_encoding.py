"""400 for a query string that is not percent-encoded UTF-8.

WSGI hands the query string over undecoded, and Falcon decodes each value's bytes with
replacement, so `?keyword=%FF` would be served as the keyword "\ufffd": a different question
from the one asked. Every value of this API is text or digits, so such a request is refused,
naming the parameter, before anything reads it.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

import falcon

from paramcheck import FieldError
from service.http.errors import Problem

REASON = "is not valid UTF-8; percent-encode the UTF-8 bytes of the text"


def invalid_names(query_string: str) -> list[str]:
    """The parameters whose name or value is not UTF-8 once percent-decoded, in order."""
    names: list[str] = []
    for pair in query_string.split("&"):
        raw_name, _, raw_value = (unquote_to_bytes(part.replace("+", " ")) for part in pair.partition("="))
        name = raw_name.decode("utf-8", "replace")
        try:
            raw_name.decode("utf-8")
            raw_value.decode("utf-8")
        except UnicodeDecodeError:
            if name not in names:
                names.append(name)
    return names


class QueryEncodingMiddleware:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = req.query_string
        if not query or query.isascii() and "%" not in query:
            return
        names = invalid_names(query)
        if names:
            raise Problem(400, "The query string is not valid UTF-8.", errors=[FieldError(n, REASON) for n in names])
