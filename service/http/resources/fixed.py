"""A browser token's fixed parameters applied to a request to a data endpoint
(service/http/resources/signals.py calls these while it parses the request).

A parameter the request leaves out takes the fixed value, as if it had been sent: in the query
string (so the prepared-request memo, the next page's link and the most asked requests all read
the request as it is answered) or in the JSON body. One it sends with another value is refused,
400 naming it. Values are compared as the endpoint reads them (`Param.normalised`: a keyword in any
case is the same keyword, `limit=10` is 10).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, cast

import falcon

from paramcheck import FieldError, check_json, check_text
from service.api.params import Param


def fix_query(req: falcon.Request, params: Sequence[Param], fixed: Mapping[str, Any]) -> list[FieldError]:
    """Add the fixed parameters the query string leaves out; the ones it contradicts."""
    errors: list[FieldError] = []
    missing: dict[str, str] = {}
    for param in params:
        if param.name not in fixed:
            continue
        text = query_text(fixed[param.name])
        sent = req.params.get(param.name)
        if sent is None:
            missing[param.name] = text
        elif not isinstance(sent, str) or not _same(param, _from_text(param, sent), fixed[param.name]):
            errors.append(FieldError(param.name, _contradicts(text)))
    if missing and not errors:
        extra = urllib.parse.urlencode(missing, quote_via=urllib.parse.quote)
        req.query_string = f"{req.query_string}&{extra}" if req.query_string else extra
        # Falcon's params are the dict it parsed the query string into (it merges form bodies into
        # it the same way): the request reads as if the parameters had been sent.
        cast(dict[str, Any], req.params).update(missing)
    return errors


def fix_body(body: Any, params: Sequence[Param], fixed: Mapping[str, Any]) -> tuple[Any, list[FieldError]]:
    """The body with the fixed fields it leaves out added; the ones it contradicts. A body that is
    not an object is left to the endpoint's own check."""
    if not isinstance(body, dict):
        return body, []
    errors: list[FieldError] = []
    fixed_body = dict(body)
    for param in params:
        if param.name not in fixed:
            continue
        value = fixed[param.name]
        if param.name not in body:
            fixed_body[param.name] = value
        elif not _same(param, _from_json(param, body[param.name]), value):
            errors.append(FieldError(param.name, _contradicts(json.dumps(value, ensure_ascii=False))))
    return fixed_body, errors


def query_text(value: Any) -> str:
    """A fixed value as a query string writes it (a GET's parameters are strings, numbers and booleans)."""
    return value if isinstance(value, str) else json.dumps(value)


_INVALID = object()


def _from_text(param: Param, text: str) -> Any:
    try:
        return check_text(param.schema, text)
    except ValueError:
        return _INVALID


def _from_json(param: Param, value: Any) -> Any:
    checked, problems = check_json(param.schema, value, param.name)
    return _INVALID if problems else checked


def _same(param: Param, sent: Any, fixed: Any) -> bool:
    if sent is _INVALID:
        return False
    return bool(param.normalised(sent) == param.normalised(_from_json(param, fixed)))


def _contradicts(shown: str) -> str:
    return f"is fixed to {shown} by this token; leave it out or send {shown}"
