"""One error shape for every failure: application/problem+json (RFC 9457).

Every error, whether raised by our code (`Problem`) or by Falcon itself (404, 405, ...), is
serialised by `serialize_problem`, so clients see the same fields everywhere:
type, title, status, detail, errors (per parameter), request_id, disclaimer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import falcon

from paramcheck import FieldError
from service.api.disclaimer import DISCLAIMER

log = logging.getLogger("signals.errors")

PROBLEM_JSON = "application/problem+json"

# status -> (slug, title). The slug forms the problem type URI.
_KINDS = {
    400: ("invalid-request", "Invalid or missing parameter"),
    401: ("unauthorized", "Missing or invalid API key"),
    403: ("insufficient-tier", "The endpoint requires a higher plan tier"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    411: ("length-required", "Content-Length required"),
    413: ("payload-too-large", "Request body too large"),
    414: ("uri-too-long", "URI too long"),
    415: ("unsupported-media-type", "Unsupported media type"),
    422: ("query-too-large", "Query too large"),
    429: ("rate-limited", "Rate limit exceeded"),
    431: ("header-fields-too-large", "Request header fields too large"),
    500: ("internal-error", "Internal server error"),
    503: ("unavailable", "Service unavailable"),
}


# Problems with a kind of their own besides their status's: slug -> title.
COMPUTATION_TIMEOUT = "computation-timeout"
WEBHOOK_LIMIT = "webhook-limit-reached"
ANSWER_NOT_READY = "answer-not-ready"
PRIVACY_BUDGET = "privacy-budget"
OUTSIDE_RELEASE = "outside-release"  # 422: a /query no released table covers
CREDENTIAL_NOT_ALLOWED = "credential-not-allowed"  # 403: a key from a web page, a token outside its scope
_OTHER_KINDS = {COMPUTATION_TIMEOUT: "Computation took too long", WEBHOOK_LIMIT: "Webhook limit reached",
                ANSWER_NOT_READY: "Answer not ready yet", PRIVACY_BUDGET: "Privacy budget spent",
                OUTSIDE_RELEASE: "Not in the release", CREDENTIAL_NOT_ALLOWED: "Not allowed with this credential"}


def problem_type(status: int, slug: str | None = None) -> str:
    slug = slug or _KINDS.get(status, ("error", ""))[0]
    return f"urn:signals:problem:{slug}"


def problem_title(status: int, fallback: str = "Error") -> str:
    return _KINDS.get(status, ("", fallback))[1]


class Problem(falcon.HTTPError):
    """An error response. `errors` lists the offending parameters, each with a reason. `kind` names
    a problem type other than the status's own (its slug, see _OTHER_KINDS); `extensions` are extra
    members of the body (RFC 9457 section 3.2), placed after `errors`."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        errors: Sequence[FieldError] = (),
        headers: dict[str, str] | None = None,
        title: str | None = None,
        kind: str | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            falcon.code_to_http_status(status),
            title=title or (_OTHER_KINDS[kind] if kind else _KINDS.get(status, ("", "Error"))[1]),
            description=detail,
            headers=headers,
        )
        self.errors = list(errors)
        self.kind = kind
        self.extensions = dict(extensions or {})


def problem_body(status: int, title: str, detail: str | None, errors: Sequence[FieldError], request_id: str | None,
                 *, kind: str | None = None, extensions: Mapping[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": problem_type(status, kind),
        "title": title,
        "status": status,
        "detail": detail or title,
    }
    if errors:
        body["errors"] = [e.as_dict() for e in errors]
    body.update(extensions or {})
    body["request_id"] = request_id
    body["disclaimer"] = DISCLAIMER
    return body


def serialize_problem(req: falcon.Request, resp: falcon.Response, exc: falcon.HTTPError) -> None:
    """Falcon error serializer: every HTTPError becomes problem+json."""
    status = exc.status_code
    title = exc.title or _KINDS.get(status, ("", "Error"))[1]
    body = problem_body(status, title, exc.description, getattr(exc, "errors", ()), getattr(req.context, "request_id", None),
                        kind=getattr(exc, "kind", None), extensions=getattr(exc, "extensions", None))
    resp.content_type = PROBLEM_JSON
    resp.data = json.dumps(body).encode()
    resp.append_header("Vary", "Accept")


def handle_unexpected(req: falcon.Request, resp: falcon.Response, exc: Exception, params: dict) -> None:
    """Last resort: log the traceback with the request id, answer a 500 problem without internals."""
    log.exception("unhandled error (request_id=%s, path=%s)", getattr(req.context, "request_id", None), req.path)
    raise Problem(500, "An unexpected error occurred. Quote the request_id when contacting support.")
