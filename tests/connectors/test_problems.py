"""The consumers' problems (connectors/problems.py) are the API's shape, and a type they share with
the API (service/http/errors.py) means the same status there."""

from __future__ import annotations

from connectors import problems
from service.http.errors import _KINDS, problem_body, problem_type


def test_a_type_the_api_also_has_carries_the_apis_status() -> None:
    shared = {getattr(problems, name): name for name in dir(problems) if name.isupper() and name != "PREFIX"
              and isinstance(getattr(problems, name), str) and getattr(problems, name).startswith(problems.PREFIX)}
    by_type = {problem_type(status): status for status in _KINDS}
    statuses = {"INVALID_REQUEST": 400, "UNAUTHORIZED": 401, "INSUFFICIENT_TIER": 403, "INTERNAL_ERROR": 500,
                "UNAVAILABLE": 503}
    assert {name: by_type[kind] for kind, name in shared.items() if kind in by_type} == statuses
    assert {"UNREACHABLE", "UNKNOWN_OPERATION", "UNEXPECTED_ANSWER", "TOO_MANY_PAGES"} == {
        name for kind, name in shared.items() if kind not in by_type}  # the consumers' own: never the API's


def test_a_problem_has_the_apis_members_in_its_order() -> None:
    api = problem_body(400, "Invalid or missing parameter", "Bad.", [], "req-1")
    ours = problems.problem(problems.INVALID_REQUEST, "Invalid or missing parameter", 400, "Bad.", request_id="req-1")
    assert ours == {k: v for k, v in api.items() if k != "disclaimer"}
    assert list(ours) == [k for k in api if k != "disclaimer"]
    assert problems.text({**ours, "errors": [{"name": "limit", "reason": "is too big"}]}) == \
        "Invalid or missing parameter (400): Bad.\n- limit: is too big"
