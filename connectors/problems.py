"""The one error shape of every surface: the API's problem+json (RFC 9457) fields, `type`, `title`,
`status`, `detail`, then `errors` (per field: name, reason), `request_id` and any other member the
API sent. A failure the API answered carries its problem as it is; a failure found on this side
(the client's refusal before sending, no answer at all, the MCP server's own refusals) is written
in the same shape, with one of the types below. The slugs that are also the API's
(`invalid-request`, `unauthorized`, ...) mean what they mean there (service/http/errors.py;
tests/connectors/test_problems.py holds the two side by side).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PREFIX = "urn:signals:problem:"

# Found on this side, never answered by the API:
UNREACHABLE = PREFIX + "unreachable"  # no answer: the connection failed or timed out (status null)
UNKNOWN_OPERATION = PREFIX + "unknown-operation"  # a name the API's document does not have (nothing sent)
UNEXPECTED_ANSWER = PREFIX + "unexpected-answer"  # an answer that is not what the document says (not JSON)
TOO_MANY_PAGES = PREFIX + "too-many-pages"  # an answer of more pages than the caller allows (nothing returned)
NOT_PROBLEM_JSON = "about:blank"  # an error answer without a problem body (a proxy's page): its status says all
# The API's own, for the same problem found before asking it:
INVALID_REQUEST = PREFIX + "invalid-request"  # 400
UNAUTHORIZED = PREFIX + "unauthorized"  # 401
INSUFFICIENT_TIER = PREFIX + "insufficient-tier"  # 403
INTERNAL_ERROR = PREFIX + "internal-error"  # 500
UNAVAILABLE = PREFIX + "unavailable"  # 503


def problem(type: str, title: str, status: int | None, detail: str | None = None, *,
            errors: Sequence[Mapping[str, str]] = (), request_id: str | None = None,
            **extensions: Any) -> dict[str, Any]:
    """A problem in the API's shape (members in the API's order; `detail` defaults to the title)."""
    body: dict[str, Any] = {"type": type, "title": title, "status": status, "detail": detail or title}
    if errors:
        body["errors"] = [dict(e) for e in errors]
    body.update(extensions)
    if request_id is not None:
        body["request_id"] = request_id
    return body


def text(body: Mapping[str, Any]) -> str:
    """A problem in a few lines: `title (status): detail`, then one line per field error."""
    status = body.get("status")
    lines = [f"{body.get('title')}" + (f" ({status})" if status else "") + f": {body.get('detail')}"]
    lines += [f"- {e.get('name')}: {e.get('reason')}" for e in body.get("errors") or [] if isinstance(e, Mapping)]
    return "\n".join(lines)
