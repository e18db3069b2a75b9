"""Each field prompt of the terminal client, fed input lines (no terminal, no server)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.connect import (
    ANSWERS,
    MISSING,
    Answer,
    FieldError,
    Texts,
    ask_field,
    ask_form,
    ask_url,
    form_field,
    parse_field,
)
from erlmcp_py.core.schema import (
    boolean_field,
    enum_field,
    integer_field,
    multi_select_field,
    number_field,
    object_schema,
    string_field,
)

EN = Texts("en-US")
PT = Texts("pt-BR")


class Lines:
    """A prompter fed fixed input lines; it records every prompt and printed line."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = list(lines)
        self.prompts: list[str] = []
        self.said: list[str] = []

    async def ask(self, prompt: str, *, history: str | None = ANSWERS) -> str:
        self.prompts.append(prompt)
        if not self.lines:
            raise EOFError
        return self.lines.pop(0)

    def say(self, text: str) -> None:
        self.said.append(text)

    @property
    def errors(self) -> list[str]:
        return [line.strip()[2:] for line in self.said if line.strip().startswith("! ")]


async def ask(
    prop: Mapping[str, Any], lines: Iterable[str], *, required: bool = True, t: Texts = EN
) -> tuple[Any, Lines]:
    io = Lines(lines)
    value = await ask_field(io, t, form_field("f", prop, required))
    assert not io.lines, "every line was read"
    return value, io


# -- text ---------------------------------------------------------------------------------------


async def test_text_is_taken_as_typed_and_its_lengths_are_checked_before_sending() -> None:
    prop = string_field(title="Name", min_length=2, max_length=4)
    value, io = await ask(prop, ["a", "abcde", " ab "])
    assert value == " ab "
    assert io.errors == ["Too short: at least 2 characters.", "Too long: at most 4 characters."]
    assert io.said[0] == "Name *"
    assert io.prompts[0] == "  [2 to 4 characters] > "


async def test_a_format_is_named_in_the_prompt_and_checked() -> None:
    value, io = await ask(string_field(format="email"), ["nope", "ada@example.com"])
    assert value == "ada@example.com"
    assert io.errors == ["Not a valid email address."]
    assert io.prompts[0] == "  [email address] > "


async def test_a_date_is_asked_as_yyyy_mm_dd_and_checked() -> None:
    value, io = await ask(string_field(format="date"), ["31/01/2026", "2026-02-30", "2026-01-31"])
    assert value == "2026-01-31"
    assert io.errors == ["Not a valid date, YYYY-MM-DD.", "Not a valid date, YYYY-MM-DD."]
    _, io_pt = await ask(string_field(format="date"), ["2026-01-31"], t=PT)
    assert io_pt.prompts[0] == "  [data, AAAA-MM-DD] > "


async def test_a_default_is_shown_and_taken_on_an_empty_line() -> None:
    value, io = await ask(string_field(default="John Doe", description="User name"), [""])
    assert value == "John Doe"
    assert io.said[0] == "f * — User name"
    assert io.prompts[0] == "  [default: John Doe] > "


async def test_a_required_field_asks_again_on_an_empty_line() -> None:
    value, io = await ask(string_field(), ["", "x"])
    assert value == "x"
    assert io.errors == ["Required: enter a value."]


async def test_an_optional_field_left_empty_is_left_out() -> None:
    value, io = await ask(string_field(title="Nick"), [""], required=False)
    assert value is MISSING
    assert io.said[0] == "Nick"


# -- numbers ------------------------------------------------------------------------------------


async def test_an_integer_refuses_text_fractions_and_out_of_bounds_values() -> None:
    prop = integer_field(title="Age", minimum=13, maximum=130)
    value, io = await ask(prop, ["old", "36.5", "12", "131", "36.0"])
    assert value == 36
    assert type(value) is int
    assert io.errors == [
        "Not a number.",
        "Not a whole number.",
        "Too small: at least 13.",
        "Too large: at most 130.",
    ]
    assert io.prompts[0] == "  [whole number; 13 to 130] > "


async def test_a_number_takes_decimals_and_refuses_nan_and_infinity() -> None:
    value, io = await ask(number_field(minimum=0, default=95.5), ["nan", "inf", "-1", "2.25"])
    assert value == 2.25
    assert io.errors == ["Not a number.", "Not a number.", "Too small: at least 0."]
    assert io.prompts[0] == "  [number; at least 0; default: 95.5] > "


@given(st.integers())
def test_any_integer_typed_parses_to_itself(n: int) -> None:
    f = form_field("n", integer_field(), True)
    assert parse_field(f, str(n), EN) == n
    assert parse_field(f, f" {n} ", EN) == n


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_number_typed_parses_to_itself(x: float) -> None:
    f = form_field("x", number_field(), True)
    assert parse_field(f, repr(x), EN) == x


@given(st.text())
def test_a_number_field_gives_a_finite_number_or_a_field_error(text: str) -> None:
    f = form_field("x", number_field(), True)
    error: FieldError | None = None
    try:
        value = parse_field(f, text, EN)
    except FieldError as exc:
        error = exc
    if error is None:
        assert math.isfinite(value)
    else:
        assert error.text == "Not a number."


# -- boolean ------------------------------------------------------------------------------------


async def test_a_boolean_is_y_or_n() -> None:
    value, io = await ask(boolean_field(title="Newsletter"), ["maybe", "Y"])
    assert value is True
    assert io.errors == ["Answer y or n."]
    assert io.prompts[0] == "  [y/n] > "
    value, _ = await ask(boolean_field(), ["no"])
    assert value is False


async def test_a_boolean_in_portuguese_is_s_or_n_and_its_default_in_that_word() -> None:
    value, io = await ask(boolean_field(default=True), ["talvez", "n"], t=PT)
    assert value is False
    assert io.errors == ["Responda s ou n."]
    assert io.prompts[0] == "  [s/n; padrão: s] > "
    value, _ = await ask(boolean_field(default=True), [""], t=PT)
    assert value is True


# -- choices ------------------------------------------------------------------------------------


async def test_a_choice_is_numbered_and_picked_by_number_or_value() -> None:
    prop = enum_field(["eu-west", "us-east"], title="Region")
    value, io = await ask(prop, ["3", "0", "2"])
    assert value == "us-east"
    assert io.said[:3] == ["Region *", "    1) eu-west", "    2) us-east"]
    assert io.errors == ["Choose by number, 1 to 2.", "Choose by number, 1 to 2."]
    value, _ = await ask(prop, ["eu-west"])
    assert value == "eu-west"


@pytest.mark.parametrize("legacy", [False, True], ids=["oneOf", "enumNames"])
async def test_a_titled_choice_shows_titles_and_answers_the_value(legacy: bool) -> None:
    prop = enum_field({"s": "Small", "m": "Medium"}, default="m", legacy_names=legacy)
    value, io = await ask(prop, ["small"])
    assert value == "s"
    assert io.said[1:] == ["    1) Small", "    2) Medium"]
    if not legacy:  # enumNames carries no default on the wire builder's legacy shape
        assert io.prompts[0] == "  [number; default: 2] > "
        value, _ = await ask(prop, [""])
        assert value == "m"


async def test_a_multi_select_is_a_comma_list_of_numbers_checked_for_repeats_and_counts() -> None:
    prop = multi_select_field({"a": "Alpha", "b": "Beta", "c": "Gamma"}, min_items=1, max_items=2)
    value, io = await ask(prop, ["1,1", "", ",", "1,2,3", "4", "3, 1"])
    assert value == ["c", "a"]
    assert io.errors == [
        "An option is repeated.",
        "Required: enter a value.",
        "Choose at least 1.",
        "Choose at most 2.",
        "Choose by number, 1 to 3.",
    ]
    assert io.prompts[0] == "  [numbers separated by commas] > "


async def test_an_optional_multi_select_can_be_left_empty_and_has_a_default() -> None:
    prop = multi_select_field(["x", "y"])
    value, io = await ask(prop, [""], required=False)
    assert value is MISSING
    assert io.prompts[0] == "  [numbers separated by commas; empty for none] > "
    value, io = await ask(multi_select_field(["x", "y"], default=["y"]), [""])
    assert value == ["y"]
    assert io.prompts[0] == "  [numbers separated by commas; default: 2] > "


# -- the whole form -----------------------------------------------------------------------------

FORM = object_schema(
    {
        "name": string_field(title="Name", min_length=1),
        "age": integer_field(title="Age", minimum=0),
        "plan": enum_field(["free", "pro"], default="free"),
    },
    required=["name", "age"],
)


async def test_a_form_is_submitted_with_every_value_and_the_defaults() -> None:
    io = Lines(["Ada", "36", "", "1"])
    answer = await ask_form(io, EN, "Who are you?", FORM)
    assert answer == Answer("accept", {"name": "Ada", "age": 36, "plan": "free"})
    assert answer.result() == {
        "action": "accept",
        "content": {"name": "Ada", "age": 36, "plan": "free"},
    }
    assert io.said[:3] == ["The server asks:", "  Who are you?", "* Required"]
    assert io.prompts[-1] == "[1] Submit  [2] Reject  [3] Cancel "
    assert io.said[-1] == "Answer sent."


@pytest.mark.parametrize(
    ("choice", "action", "t"),
    [
        ("2", "decline", EN),
        ("reject", "decline", EN),
        ("Recusar", "decline", PT),
        ("3", "cancel", EN),
        ("c", "cancel", EN),
        ("cancelar", "cancel", PT),
        ("enviar", "accept", PT),
    ],
)
async def test_the_last_choice_is_submit_reject_or_cancel(
    choice: str, action: str, t: Texts
) -> None:
    io = Lines(["Ada", "1", "", "?", choice])
    answer = await ask_form(io, t, "Who?", FORM)
    assert answer.action == action
    assert (answer.content is not None) == (action == "accept")
    assert len(io.errors) == 1


async def test_the_end_of_input_cancels_the_form() -> None:
    io = Lines(["Ada"])
    assert await ask_form(io, EN, "Who?", FORM) == Answer("cancel")
    assert io.said[-1] == "Cancelled."


async def test_a_form_in_portuguese_marks_required_fields_and_offers_enviar() -> None:
    io = Lines(["Ada", "1", "", "1"])
    await ask_form(io, PT, "Quem é você?", FORM)
    assert io.said[:3] == ["O servidor pergunta:", "  Quem é você?", "* Obrigatório"]
    assert io.prompts[-1] == "[1] Enviar  [2] Recusar  [3] Cancelar "
    assert io.said[-1] == "Resposta enviada."


async def test_a_field_outside_the_mcp_subset_is_asked_as_json_or_text() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "object"}}, "required": ["x"]}
    io = Lines(['{"a": 1}', "1"])
    assert await ask_form(io, EN, "?", schema) == Answer("accept", {"x": {"a": 1}})


async def test_a_malformed_schema_is_still_asked_field_by_field() -> None:
    schema = {"properties": {"a": "string", "b": {"enum": "xy"}}, "required": "a"}
    io = Lines(["text", "7", "1"])
    assert await ask_form(io, EN, "?", schema) == Answer("accept", {"a": "text", "b": 7})


# -- URL mode -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "action", "opened"),
    [
        ("1", "accept", True),
        ("2", "accept", False),
        ("3", "decline", False),
        ("4", "cancel", False),
    ],
)
async def test_a_url_is_shown_and_opened_only_when_the_user_says_so(
    choice: str, action: str, opened: bool
) -> None:
    io = Lines(["9", choice])
    pages: list[str] = []

    def browser(url: str) -> bool:
        pages.append(url)
        return True  # webbrowser.open: a browser took it

    answer = await ask_url(io, EN, "Sign in", "https://example.com/x", browser)
    assert answer == Answer(action)
    assert pages == (["https://example.com/x"] if opened else [])
    assert io.said[:3] == [
        "The server asks you to continue on a web page:",
        "  Sign in",
        "  https://example.com/x",
    ]
    assert ("Opening external page: https://example.com/x" in io.said) == opened


def no_browser(url: str) -> bool:
    return False  # webbrowser.open when it finds no browser to run


def broken_browser(url: str) -> bool:
    raise OSError("no such program")


@pytest.mark.parametrize("browser", [no_browser, broken_browser])
async def test_when_no_browser_opens_the_user_is_told_to_open_the_url(
    browser: Callable[[str], bool],
) -> None:
    io = Lines(["1"])
    answer = await ask_url(io, EN, "Sign in", "https://example.com/x", browser)
    assert answer == Answer("accept")  # the user agreed to go to the page
    assert io.said[-1] == (
        "No browser could be opened; open this URL yourself: https://example.com/x"
    )
    assert not any("Opening external page" in line for line in io.said)


async def test_a_url_in_portuguese_says_abrindo_pagina_externa() -> None:
    io = Lines(["1", "1"])
    await ask_url(io, PT, "Entre", "https://example.com/x", lambda url: True)
    assert "Abrindo página externa: https://example.com/x" in io.said
    await ask_url(io, PT, "Entre", "https://example.com/x", no_browser)
    assert io.said[-1] == (
        "Nenhum navegador pôde ser aberto; abra este endereço você mesmo: https://example.com/x"
    )
