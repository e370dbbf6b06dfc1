"""The parameter validator, without HTTP."""

import pytest

from service.api.params import Param, ValidationFailed, parse_body, parse_query

WINDOW = Param("window", "string", "", default="24h", enum=("1h", "24h"))
LIMIT = Param("limit", "integer", "", default=50, minimum=1, maximum=500)
KEYWORD = Param("keyword", "string", "", required=True, normalise=str.strip, min_length=1, max_length=5, not_blank=True)
RATIO = Param("ratio", "number", "", default=10, minimum=0)
TAGS = Param("tags", "array", "", default=(), max_items=2, unique_items=True,
             items=Param("tag", "string", "", enum=("a", "b", "c")))
FILTERS = Param("filters", "object", "", properties=(
    Param("xs", "array", "", min_items=1, max_items=2, items=Param("x", "string", "", min_length=1, max_length=3)),
))


def errors_of(call) -> list[dict]:
    with pytest.raises(ValidationFailed) as info:
        call()
    return [e.as_dict() for e in info.value.errors]


def test_defaults_fill_in_absent_parameters():
    assert parse_query([WINDOW, LIMIT], {}) == {"window": "24h", "limit": 50}


def test_query_values_are_converted_and_checked():
    assert parse_query([WINDOW, LIMIT, RATIO], {"window": "1h", "limit": "500", "ratio": "2.5"}) == {
        "window": "1h", "limit": 500, "ratio": 2.5}


@pytest.mark.parametrize("raw, fragment", [
    ("0", "out of bounds"), ("501", "out of bounds"), ("-3", "out of bounds"),
    ("ten", "not valid"), ("1.5", "not valid"), ("", "not valid"), ("99999999999999999999999", "not valid"),
])
def test_integer_bounds_and_types(raw, fragment):
    [error] = errors_of(lambda: parse_query([LIMIT], {"limit": raw}))
    assert error["name"] == "limit" and fragment in error["reason"] and "1 to 500" in error["reason"]


@pytest.mark.parametrize("raw", ["nan", "inf", "-1", "x"])
def test_number_rejects_non_finite_and_out_of_bounds(raw):
    [error] = errors_of(lambda: parse_query([RATIO], {"ratio": raw}))
    assert error["name"] == "ratio"


def test_enum_error_lists_choices_and_suggests():
    [error] = errors_of(lambda: parse_query([WINDOW], {"window": "24H"}))
    assert "one of 1h, 24h" in error["reason"] and "did you mean '24h'" in error["reason"]


def test_unknown_parameter_gets_a_did_you_mean_hint():
    [error] = errors_of(lambda: parse_query([WINDOW, LIMIT], {"limt": "5"}))
    assert error["name"] == "limt" and "Did you mean 'limit'" in error["reason"]


def test_repeated_parameter_is_an_error():
    [error] = errors_of(lambda: parse_query([LIMIT], {"limit": ["5", "6"]}))
    assert "repeated" in error["reason"]


def test_every_problem_is_reported_at_once():
    errors = errors_of(lambda: parse_query([WINDOW, LIMIT, KEYWORD], {"window": "2h", "limit": "0", "x": "1"}))
    assert sorted(e["name"] for e in errors) == ["keyword", "limit", "window", "x"]


def test_required_and_normalised_string_lengths():
    assert parse_query([KEYWORD], {"keyword": "  ab "}) == {"keyword": "ab"}
    assert "required" in errors_of(lambda: parse_query([KEYWORD], {}))[0]["reason"]
    assert "empty" in errors_of(lambda: parse_query([KEYWORD], {"keyword": ""}))[0]["reason"]
    assert "blank" in errors_of(lambda: parse_query([KEYWORD], {"keyword": "   "}))[0]["reason"]
    assert "6 characters" in errors_of(lambda: parse_query([KEYWORD], {"keyword": "abcdef"}))[0]["reason"]


def test_string_lengths_apply_to_the_value_as_sent():
    """As the schema says (maxLength 5): ' abcd ' is 6 characters although it normalises to 4;
    what normalising gives may be longer than the bound, or empty, and is then simply matched."""
    assert "6 characters" in errors_of(lambda: parse_query([KEYWORD], {"keyword": " abcd "}))[0]["reason"]
    upper = Param("code", "string", "", normalise=str.upper, min_length=2, max_length=2)
    assert parse_query([upper], {"code": "ßa"}) == {"code": "SSA"}
    dotted = Param("host", "string", "", normalise=lambda text: text.strip("."), min_length=1, max_length=9)
    assert parse_query([dotted], {"host": "."}) == {"host": ""}


def test_not_blank_pattern_is_exactly_python_white_space():
    """The schema's pattern and the check agree with str.isspace() on every character."""
    import re
    import sys

    from service.api.params import NOT_BLANK_PATTERN

    assert KEYWORD.json_schema()["pattern"] == NOT_BLANK_PATTERN
    pattern = re.compile(NOT_BLANK_PATTERN)
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert bool(pattern.search(char)) != char.isspace(), hex(code)


def test_body_types_are_strict():
    assert parse_body([LIMIT, TAGS], {"limit": 5, "tags": ["a", "b"]}) == {"limit": 5, "tags": ("a", "b")}


@pytest.mark.parametrize("bad", ["5", 5.5, True, [5], {"n": 5}])
def test_body_integer_rejects_other_json_types(bad):
    assert errors_of(lambda: parse_body([LIMIT], {"limit": bad}))[0]["name"] == "limit"


def test_body_must_be_an_object():
    assert errors_of(lambda: parse_body([LIMIT], [1, 2]))[0]["name"] == "body"


def test_body_arrays_items_uniqueness_and_size():
    assert errors_of(lambda: parse_body([TAGS], {"tags": ["a", "a"]}))[0]["reason"] == "must not repeat a value"
    assert "at most 2" in errors_of(lambda: parse_body([TAGS], {"tags": ["a", "b", "c"]}))[0]["reason"]
    assert errors_of(lambda: parse_body([TAGS], {"tags": ["a", "z"]}))[0]["name"] == "tags[1]"
    assert "must be an array" in errors_of(lambda: parse_body([TAGS], {"tags": "a"}))[0]["reason"]


def test_body_nested_objects_name_the_path():
    assert parse_body([FILTERS], {"filters": {"xs": ["a"]}}) == {"filters": {"xs": ("a",)}}
    assert errors_of(lambda: parse_body([FILTERS], {"filters": {"xs": []}}))[0]["name"] == "filters.xs"
    assert errors_of(lambda: parse_body([FILTERS], {"filters": {"xs": ["abcd"]}}))[0]["name"] == "filters.xs[0]"
    [error] = errors_of(lambda: parse_body([FILTERS], {"filters": {"x": ["a"]}}))
    assert error["name"] == "filters.x" and "Did you mean 'xs'" in error["reason"]


def test_body_unknown_field():
    [error] = errors_of(lambda: parse_body([LIMIT], {"limits": 5}))
    assert error["name"] == "limits" and "field" in error["reason"]


@pytest.mark.parametrize("param", [WINDOW, LIMIT, KEYWORD, RATIO, TAGS, FILTERS])
def test_body_null_is_refused_not_taken_as_absent(param):
    """No field's schema allows null: null is an error naming the field, required or not."""
    [error] = errors_of(lambda: parse_body([param], {param.name: None}))
    assert error["name"] == param.name and "must not be null" in error["reason"]


@pytest.mark.parametrize("body, name", [
    ({"tags": [None]}, "tags[0]"), ({"filters": {"xs": None}}, "filters.xs"), ({"filters": {"xs": [None]}}, "filters.xs[0]"),
])
def test_body_null_inside_arrays_and_objects_is_refused(body, name):
    assert errors_of(lambda: parse_body([TAGS, FILTERS], body))[0]["name"] == name


@pytest.mark.parametrize("value", [147.0, 1.0, 5e2])
def test_body_integer_accepts_integral_numbers(value):
    """JSON Schema counts 147.0 as an integer; it is accepted, as the int."""
    result = parse_body([LIMIT], {"limit": value})["limit"]
    assert result == int(value) and type(result) is int


@pytest.mark.parametrize("value, fragment", [(147.5, "not valid"), (1e300, "out of bounds"), (0.0, "out of bounds")])
def test_body_integer_still_refuses_fractions_and_bounds(value, fragment):
    [error] = errors_of(lambda: parse_body([LIMIT], {"limit": value}))
    assert error["name"] == "limit" and fragment in error["reason"]


def test_query_string_integers_stay_digits_only():
    """A query string is text; the OpenAPI type there is integer and clients send '147'."""
    [error] = errors_of(lambda: parse_query([LIMIT], {"limit": "147.0"}))
    assert error["name"] == "limit" and "not valid" in error["reason"]


def test_json_schema_carries_bounds_and_defaults():
    assert LIMIT.json_schema() == {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}
    assert TAGS.json_schema()["items"]["enum"] == ["a", "b", "c"]
    assert FILTERS.json_schema()["additionalProperties"] is False
