"""414 for a URL (path and query string) longer than MAX_URL_BYTES, before anything else reads it.

Why 4096 bytes: the longest meaningful request is about 1.3 KB (`/keyword-timeseries` with a
100-character keyword whose every character takes 4 UTF-8 bytes, percent-encoded, plus the other
parameters), so 4096 leaves three times that. It is also below the request-line limits of the
servers and proxies commonly put in front of an API (gunicorn 8190, nginx 8 KiB, most CDNs 8 KiB),
so a client past it gets our answer, in our format, rather than whatever the server in front
says. gunicorn.conf.py raises gunicorn's own limit to its maximum so that it does not answer first.
"""

from __future__ import annotations

import falcon

from service.http.errors import Problem

MAX_URL_BYTES = 4096


def url_bytes(env: dict) -> int:
    """Length of the path and query string as the app sees them. PATH_INFO is percent-decoded
    (PEP 3333 carries it as one character per byte), the query string is not."""
    query = env.get("QUERY_STRING", "")
    return len(env.get("SCRIPT_NAME", "")) + len(env.get("PATH_INFO", "")) + (len(query) + 1 if query else 0)


class UrlLengthMiddleware:
    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        length = url_bytes(req.env)
        if length > MAX_URL_BYTES:
            raise Problem(414, f"The URL (path and query string) is {length} bytes long; at most {MAX_URL_BYTES} "
                               "are accepted. Every parameter of this API fits well within that.")
