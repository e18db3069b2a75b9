"""``call TOOL key=value`` and ``prompt NAME key=value``: values as JSON or text, checked
against the tool's inputSchema or the prompt's declared arguments before anything is sent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.connect import (
    ArgumentError,
    Texts,
    check_arguments,
    check_prompt_arguments,
    parse_arguments,
    parse_value,
    prompt_schema,
)

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
        "  extra: no such argument",
        "  name: required, missing",
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


#: A tool's inputSchema as a server writes it from a function: no ``additionalProperties``
#: (and a server that drops the keys it does not know).
EXPENSE = {
    "type": "object",
    "properties": {
        "employee": {"type": "string"},
        "amount": {"type": "number"},
        "note": {"type": "string"},
    },
    "required": ["employee", "amount"],
}


def test_a_misspelt_optional_argument_is_refused_with_the_closest_name() -> None:
    with pytest.raises(ArgumentError) as info:
        check_arguments(
            "record_expense", {"employee": "Ada", "amount": 3, "notes": "x"}, EXPENSE, T
        )
    assert info.value.lines == (
        "The arguments do not fit record_expense's input schema:",
        "  notes: no such argument; did you mean note?",
    )


def test_a_misspelt_required_argument_is_named_and_so_is_the_missing_one() -> None:
    with pytest.raises(ArgumentError) as info:
        check_arguments("record_expense", {"employe": "Ada", "amount": 3}, EXPENSE, T)
    assert info.value.lines == (
        "The arguments do not fit record_expense's input schema:",
        "  employe: no such argument; did you mean employee?",
        "  employee: required, missing",
    )


def test_the_suggestion_is_a_declared_name_not_given_already() -> None:
    schema = {"type": "object", "properties": {"arg1": {}, "arg2": {}}}
    for given_, typo, meant in (("arg2", "arg3", "arg1"), ("arg1", "arg3", "arg2")):
        with pytest.raises(ArgumentError) as info:
            check_arguments("t", {given_: "x", typo: "y"}, schema, T)
        assert info.value.lines[1] == f"  {typo}: no such argument; did you mean {meant}?"
    with pytest.raises(ArgumentError) as info:
        check_arguments("t", {"arg1": "x", "arg2": "y", "arg3": "z"}, schema, T)
    assert info.value.lines[1] == "  arg3: no such argument"  # both given: no typo of either


def test_an_unknown_argument_nothing_resembles_gets_no_suggestion() -> None:
    with pytest.raises(ArgumentError) as info:
        check_arguments("t", {"employee": "Ada", "amount": 1, "zzz": 1}, EXPENSE, T)
    assert info.value.lines[1:] == ("  zzz: no such argument",)


def test_the_suggestion_is_in_the_users_language() -> None:
    with pytest.raises(ArgumentError) as info:
        check_arguments("t", {"employe": "Ada", "amount": 3}, EXPENSE, Texts("pt-BR"))
    assert info.value.lines[1] == "  employe: argumento inexistente; você quis dizer employee?"


@pytest.mark.parametrize(
    "schema",
    [
        {**EXPENSE, "additionalProperties": True},
        {**EXPENSE, "additionalProperties": {"type": "integer"}},
        {**EXPENSE, "patternProperties": {"^x-": {}}},
        {"type": "object"},  # declares nothing: takes anything
    ],
)
def test_a_schema_that_takes_other_keys_accepts_them(schema: dict[str, Any]) -> None:
    check_arguments("t", {"employee": "Ada", "amount": 3, "x-extra": 1}, schema, T)


names = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)


@given(st.sets(names, max_size=5), st.sets(names, max_size=5))
def test_every_undeclared_key_is_reported_once_and_no_declared_one(
    declared: set[str], typed: set[str]
) -> None:
    schema = {"type": "object", "properties": {name: {} for name in declared}}
    arguments = dict.fromkeys(typed, 1)
    unknown = sorted(typed - declared)
    try:
        check_arguments("t", arguments, schema, T)
    except ArgumentError as exc:
        reported = [line.split(":")[0].strip() for line in exc.lines[1:]]
        assert reported == [key for key in arguments if key in unknown]
    else:
        assert not unknown


PROMPT_ARGS = [
    {"name": "city", "description": "Where", "required": True},
    {"name": "units", "required": False},
]


def test_a_prompts_arguments_are_text_as_typed() -> None:
    schema = prompt_schema(PROMPT_ARGS)
    assert parse_arguments(["city=007", "units=true"], schema, T) == {
        "city": "007",
        "units": "true",
    }
    check_prompt_arguments("weather", {"city": "007"}, PROMPT_ARGS, T)


def test_a_prompts_misspelt_and_missing_arguments_are_named() -> None:
    with pytest.raises(ArgumentError) as info:
        check_prompt_arguments("weather", {"cty": "Lisbon"}, PROMPT_ARGS, T)
    assert info.value.lines == (
        "The arguments do not fit prompt weather:",
        "  cty: no such argument; did you mean city?",
        "  city: required, missing",
    )


def test_a_prompt_without_arguments_takes_none() -> None:
    with pytest.raises(ArgumentError) as info:
        check_prompt_arguments("hello", {"x": "1"}, None, T)
    assert info.value.lines[1:] == ("  x: no such argument",)
