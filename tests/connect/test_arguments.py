"""``call TOOL key=value``: values as JSON or text, checked against the tool's inputSchema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.connect import ArgumentError, Texts, check_arguments, parse_arguments, parse_value

T = Texts("en-US")
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
    "additionalProperties": False,
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(json_values)
def test_a_value_that_parses_as_json_is_that_json_value(value: Any) -> None:
    assert parse_value(json.dumps(value)) == value


@given(st.text())
def test_a_value_that_is_not_json_is_the_text_itself(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        expected = text
    assert json.dumps(parse_value(text)) == json.dumps(expected)  # "NaN" parses to nan != nan


@given(st.text())
def test_a_string_property_keeps_the_text_as_typed(text: str) -> None:
    assert parse_arguments([f"name={text}"], SCHEMA, T) == {"name": text}


def test_arguments_split_at_the_first_equals_sign() -> None:
    got = parse_arguments(["name=a=b", "count=3", 'tags=["x","y"]'], SCHEMA, T)
    assert got == {"name": "a=b", "count": 3, "tags": ["x", "y"]}


@pytest.mark.parametrize("token", ["name", "=value"])
def test_a_token_without_a_key_is_refused(token: str) -> None:
    with pytest.raises(ArgumentError) as info:
        parse_arguments([token], SCHEMA, T)
    assert info.value.lines == (f"Argument {token} is not key=value.",)


def test_every_schema_problem_is_reported_by_name_never_by_value() -> None:
    with pytest.raises(ArgumentError) as info:
        check_arguments("t", {"count": "secret-7", "extra": 1}, SCHEMA, T)
    assert info.value.lines == (
        "The arguments do not fit t's input schema:",
        "  name: required, missing",
        "  extra: not an argument of this tool",
        "  count: expected integer, got string",
    )
    assert "secret-7" not in str(info.value)


def test_valid_arguments_pass_and_a_missing_schema_checks_nothing() -> None:
    check_arguments("t", {"name": "x", "count": 2}, SCHEMA, T)
    check_arguments("t", {"anything": 1}, None, T)


def test_the_messages_follow_the_locale() -> None:
    with pytest.raises(ArgumentError) as info:
        check_arguments("t", {}, SCHEMA, Texts("pt-BR"))
    assert info.value.lines == (
        "Os argumentos não servem ao esquema de entrada de t:",
        "  name: obrigatório, faltando",
    )
