"""POST /api/v1/tokens as declared: the mint request's fields (`Param`s like every other body's),
the rules a schema cannot say (what an origin is, a fixed parameter valid for every endpoint
listed, the plan), and the answer's schema. The resource is service/http/resources/tokens.py, the
token itself service/accounts/tokens.py.

A fixed parameter is checked with the endpoints' own parameter table: it must be a parameter of
every endpoint the token lists, and a value each of them takes (`window` "1h" is /top-keywords',
not /keyword-timeseries'). The document's schema of `fixed` is the widest of them (the union of
the windows, the largest limit), so a consumer's types admit every value some endpoint takes.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any

from paramcheck import FieldError, check_body, check_json
from service.api.endpoints import BY_NAME as ENDPOINTS_BY_NAME
from service.api.endpoints import ENDPOINTS, Endpoint
from service.api.params import Param, ValidationFailed
from service.api.tiers import Tier

TOKENS_PATH = "/api/v1/tokens"
MIN_TTL_SECONDS, MAX_TTL_SECONDS, DEFAULT_TTL_SECONDS = 60, 86_400, 3_600
MAX_ORIGINS = 10
MAX_ORIGIN_LENGTH = 300  # "https://" + a host name of at most 253 characters + ":65535"
DATA_OPERATIONS = tuple(endpoint.name for endpoint in ENDPOINTS)


def _widest(name: str, params: Sequence[Param]) -> Param:
    """One parameter of several endpoints as a fixed value may have it: any value one of them takes
    (enums joined, the widest bounds); the endpoints' own checks come after (`token_request`)."""
    first = params[0]
    enum = None if any(p.enum is None for p in params) else tuple(dict.fromkeys(v for p in params for v in p.enum or ()))
    lows, highs = [p.minimum for p in params], [p.maximum for p in params]
    widest = dataclasses.replace(
        first, required=False, default=None, enum=enum,
        minimum=None if None in lows else min(x for x in lows if x is not None),
        maximum=None if None in highs else max(x for x in highs if x is not None),
        description=f"Fixes `{name}` ({', '.join(e.name for e in ENDPOINTS if any(p is q for q in e.params for p in params))}).")
    for other in params[1:]:  # otherwise alike: one type, one shape
        assert dataclasses.replace(other, required=False, default=None, enum=widest.enum, minimum=widest.minimum,
                                   maximum=widest.maximum, description=widest.description) == widest, name
    return widest


def _fixable() -> tuple[Param, ...]:
    by_name: dict[str, list[Param]] = {}
    for endpoint in ENDPOINTS:
        for param in endpoint.params:
            by_name.setdefault(param.name, []).append(param)
    return tuple(_widest(name, params) for name, params in by_name.items())


ORIGINS = Param(
    "origins", "array",
    "The web pages' origins the token works from, each exactly scheme://host[:port] as a browser sends it in the "
    "Origin header: http or https, the host in lowercase (an international name in its xn-- form), a port only "
    "when it is not the scheme's default, no path and no trailing slash (https://app.example.com, "
    "http://localhost:5173). A request with the token and no Origin, or another one, is refused with 403.",
    required=True, min_items=1, max_items=MAX_ORIGINS, unique_items=True,
    items=Param("origin", "string", "", min_length=1, max_length=MAX_ORIGIN_LENGTH))
TTL = Param("ttl_seconds", "integer",
            "Seconds the token works, from now (never past the key's own expiry); then it is refused with 401.",
            default=DEFAULT_TTL_SECONDS, minimum=MIN_TTL_SECONDS, maximum=MAX_TTL_SECONDS)
TOKEN_ENDPOINTS = Param(
    "endpoints", "array",
    "The data endpoints the token may call, by operationId; leave it out for every one the subscription's plan "
    "allows. Naming one above the plan is refused with 403. Any other path (the account, webhooks, minting "
    "tokens) is refused to a token with 403.",
    min_items=1, max_items=len(DATA_OPERATIONS), unique_items=True,
    items=Param("endpoint", "string", "", enum=DATA_OPERATIONS))
FIXED = Param(
    "fixed", "object",
    "Parameters the token forces, e.g. {\"window\": \"7d\"}: each a parameter of every endpoint listed, with a "
    "value each of them takes. A request with the token that leaves one out gets the fixed value; one that sends "
    "another value is refused with 400 naming it. Leave it out to fix nothing.",
    properties=_fixable())
FIELDS: tuple[Param, ...] = (ORIGINS, TTL, TOKEN_ENDPOINTS, FIXED)

_TIME = {"type": "string", "format": "date-time"}
TOKEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "token": {"type": "string", "description": "Send it as Authorization: Bearer <token> (a signed JWT; "
                                                   "opaque to the caller)."},
        "expires_at": {**_TIME, "description": "When the token stops working (ISO 8601 UTC)."},
        "origins": {"type": "array", "items": {"type": "string"}},
        "endpoints": {"type": "array", "items": {"type": "string", "enum": list(DATA_OPERATIONS)}},
        "fixed": {"type": "object", "description": "The fixed parameters, as checked."},
    },
    "additionalProperties": False,
}
TOKEN_SCHEMA["required"] = list(TOKEN_SCHEMA["properties"])
EXAMPLE = {"origins": ["https://app.example.com"], "ttl_seconds": 3600, "endpoints": ["top_keywords", "geo_heat"],
           "fixed": {"window": "7d"}}


@dataclasses.dataclass(frozen=True)
class TokenRequest:
    """A mint request as checked: what the token will allow."""

    origins: tuple[str, ...]
    ttl_seconds: int
    endpoints: tuple[str, ...]
    fixed: dict[str, Any]


class PlanLacks(Exception):
    """The request names endpoints above the subscription's plan (403)."""

    def __init__(self, errors: Sequence[FieldError], detail: str) -> None:
        super().__init__(detail)
        self.errors = list(errors)
        self.detail = detail


def token_request(body: Any, tier: Tier) -> TokenRequest:
    """The checked request, or ValidationFailed naming every bad field (400), then PlanLacks (403)."""
    values, errors = check_body(FIELDS, body)
    for index, origin in enumerate(values.get("origins", ())):
        why = origin_problem(origin)
        if why is not None:
            errors.append(FieldError(f"origins[{index}]", why))
    asked = values.get("endpoints")
    endpoints = tuple(asked) if asked is not None else tuple(e.name for e in ENDPOINTS if tier.allows(e.min_tier))
    fixed = values.get("fixed") or {}
    if fixed and not any(e.name == "endpoints" or e.name.startswith("endpoints[") for e in errors):
        errors.extend(fixed_problems(body["fixed"], [ENDPOINTS_BY_NAME[name] for name in endpoints],
                                     listed=asked is not None))
    if errors:
        raise ValidationFailed(errors)
    lacking = [ENDPOINTS_BY_NAME[name] for name in endpoints if not tier.allows(ENDPOINTS_BY_NAME[name].min_tier)]
    if lacking:  # (only named ones can: the default is what the plan allows)
        problems = [FieldError(f"endpoints[{endpoints.index(e.name)}]",
                               f"{e.name} requires the {e.min_tier.label} plan or higher") for e in lacking]
        raise PlanLacks(problems, f"A token cannot call more than its key: {', '.join(e.name for e in lacking)} "
                                  f"{'needs' if len(lacking) == 1 else 'need'} a higher plan than this subscription's "
                                  f"{tier.label}. Leave {'it' if len(lacking) == 1 else 'them'} out of `endpoints`.")
    return TokenRequest(tuple(values["origins"]), values.get("ttl_seconds", DEFAULT_TTL_SECONDS), endpoints,
                        {name: jsonable(value) for name, value in fixed.items()})


def fixed_problems(fixed: Mapping[str, Any], endpoints: Sequence[Endpoint], *, listed: bool) -> list[FieldError]:
    """Each fixed parameter must be one of every endpoint's, with a value it takes (`listed`: the
    endpoints were named in the request, not the plan's default)."""
    errors = []
    for name, value in fixed.items():
        for endpoint in endpoints:
            param = next((p for p in endpoint.params if p.name == name), None)
            if param is None:
                which = "listed" if listed else "the plan allows (name the endpoints it applies to in `endpoints`)"
                errors.append(FieldError(f"fixed.{name}", f"is not a parameter of {endpoint.name}; a fixed parameter "
                                                          f"must be one of every endpoint {which}"))
                break
            _, problems = check_json(param.schema, value, f"fixed.{name}")
            if problems:
                errors.extend(FieldError(p.name, f"{p.reason} (for {endpoint.name})") for p in problems)
                break
    return errors


def jsonable(value: Any) -> Any:
    """A checked value (arrays as tuples) as JSON holds it."""
    if isinstance(value, tuple | list):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    return value


_DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_FORM = "scheme://host[:port], e.g. https://app.example.com"


def origin_problem(text: str) -> str | None:
    """Why `text` is not an origin exactly as a browser sends it in the Origin header; None when it is."""
    if text.strip() != text or any(c.isspace() for c in text):
        return f"has white space; write {_FORM}"
    scheme, separator, rest = text.partition("://")
    if not separator:
        return f"is not an origin; write {_FORM}"
    if scheme.lower() not in _DEFAULT_PORTS:
        return f"has the scheme {scheme!r}; an origin's scheme is http or https"
    if scheme != scheme.lower():
        return f"writes its scheme in capitals; browsers send {scheme.lower()}://"
    if "*" in rest:
        return "has a wildcard; list every origin the token works from"
    host_port, slash, path = rest.partition("/")
    if slash or "?" in host_port or "#" in host_port:
        if slash and not path and "?" not in host_port and "#" not in host_port:
            return f"ends with a slash; an origin has none: {scheme}://{host_port}"
        return f"has a path, query or fragment; an origin is {scheme}://host[:port] alone"
    if "@" in host_port:
        return "has user information (user@); an origin is scheme://host[:port] alone"
    host, port = _split_port(host_port)
    if port is not None:
        if not port.isascii() or not port.isdigit() or (len(port) > 1 and port.startswith("0")) or not 0 < int(port) < 65536:
            return f"has the port {port!r}; a port is a number from 1 to 65535 without leading zeros"
        if int(port) == _DEFAULT_PORTS[scheme]:
            return f"names {scheme}'s default port {port}; browsers send this origin without it: {scheme}://{host}"
    return _host_problem(host)


def _split_port(host_port: str) -> tuple[str, str | None]:
    if host_port.startswith("["):  # [IPv6]:port
        end = host_port.find("]")
        if end != -1 and host_port[end + 1:].startswith(":"):
            return host_port[:end + 1], host_port[end + 2:]
        return host_port, None
    host, colon, port = host_port.rpartition(":")
    return (host, port) if colon else (host_port, None)


def _host_problem(host: str) -> str | None:
    if not host:
        return "has no host"
    if host.startswith("[") and host.endswith("]"):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"has {host!r}, which is not an IPv6 address"
        return None if host == f"[{address.compressed}]" else f"writes its IPv6 address otherwise than browsers do: " \
                                                                f"[{address.compressed}]"
    if not host.isascii():
        return "has a host that is not ASCII; write an international name in its xn-- form, as browsers send it"
    if host != host.lower():
        return f"has capitals in its host; browsers send it in lowercase: {host.lower()}"
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return f"has {host!r}, which is not a host name (letters, digits and hyphens, in labels joined by dots)"
    return None
