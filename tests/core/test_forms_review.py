"""Regression tests for review findings on the seed-000 form language (core.forms_*)."""

from __future__ import annotations

from typing import Any

import pytest

from erlmcp_py.core.forms import CompiledForm, compile_form, sensitive_name, validate_form_answer

V = "2025-11-25"


def compiled(*fields: dict[str, Any], **extra: Any) -> CompiledForm:
    return compile_form({"id": "f", "title": "A form", "fields": list(fields), **extra}, V)


def errors(c: CompiledForm, content: object) -> list[tuple[str | None, str]]:
    result = validate_form_answer(c, content)
    assert result.ok == (not result.errors)
    return [(e.field, e.constraint) for e in result.errors]


NAME = {"id": "name", "type": "text", "label": "Name"}
FILE = {"id": "doc", "type": "file", "label": "Document", "validation": {"maxSize": 100}}


# --- 1. a negative file size is not "too big" ---------------------------------------------------


def test_negative_file_size_is_reported_as_minimum() -> None:
    c = compiled(FILE)
    meta = {"filename": "a.txt", "content_type": "text/plain", "size": -1}
    result = validate_form_answer(c, {"doc": meta})
    assert not result.ok
    [err] = result.errors
    assert (err.field, err.constraint, err.expected, err.path) == ("doc", "minimum", 0, "/doc/size")
    assert "at most" not in err.message
    assert err.message == "Document: the file size must not be negative."
    # the maximum is still maxSize
    big = {**meta, "size": 101}
    assert errors(c, {"doc": big}) == [("doc", "maxSize")]


# --- 2. rendering.hidden: a server-side value, part of the answer -------------------------------


def test_hidden_field_default_is_part_of_the_answer() -> None:
    # seed 000: ``hidden`` is a rendering hint and absent fields take their default; the
    # docstring of validate_form_answer now says so (it promised "the visible content")
    c = compiled(
        {**NAME, "required": True},
        {
            **NAME,
            "id": "source",
            "default": "form",
            "required": True,
            "rendering": {"hidden": True},
        },
        {**NAME, "id": "note", "rendering": {"hidden": True}},
    )
    result = validate_form_answer(c, {"name": "n", "source": "forged", "note": "x"})
    assert result.content == {"name": "n", "source": "form"}


# --- 3. a field hidden by rendering.hidden is never asked: it does not force URL mode -----------


def test_hidden_file_field_does_not_force_url_mode() -> None:
    c = compiled(NAME, {**FILE, "rendering": {"hidden": True}})
    assert c.needs_url_mode is None
    assert c.url_mode_fields == ()
    assert c.requested_schema is not None
    assert list(c.requested_schema["properties"]) == ["name"]


def test_hidden_sensitive_field_does_not_force_url_mode() -> None:
    secret = {"id": "api_token", "type": "text", "label": "API token", "default": "server-side"}
    c = compiled(NAME, {**secret, "rendering": {"hidden": True}})
    assert c.needs_url_mode is None
    assert c.requested_schema is not None
    assert list(c.requested_schema["properties"]) == ["name"]
    # the value is the server's default, never the client's
    assert validate_form_answer(c, {"name": "n", "api_token": "x"}).content == {
        "name": "n",
        "api_token": "server-side",
    }


def test_conditionally_shown_sensitive_field_still_forces_url_mode() -> None:
    c = compiled(
        {"id": "use", "type": "boolean", "label": "Use it"},
        {
            "id": "password",
            "type": "text",
            "label": "Password",
            "showWhen": {"field": "use", "value": True},
        },
    )
    assert c.url_mode_fields == ("password",)


# --- 4. sensitive names match whole words ----------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Bypass code",
        "Compass code",
        "compassCode",
        "Discard number",
        "discard_number",
        "Trespass code",
        "Encapsulate",
        "capital",
    ],
)
def test_sensitive_terms_do_not_match_inside_words(name: str) -> None:
    assert sensitive_name(name) is None
    assert compiled({"id": "x", "type": "text", "label": name}).needs_url_mode is None


@pytest.mark.parametrize(
    ("name", "term"),
    [
        ("cardNumber", "cardnumber"),
        ("card_number", "cardnumber"),
        ("Card number", "cardnumber"),
        ("passcode", "passcode"),
        ("pass code", "passcode"),
        ("Door passcode", "passcode"),
        ("password2", "password"),
        ("userpassword", "password"),
        ("API_KEY", "apikey"),
        ("aws_secret_access_key", "accesskey"),
        ("creditCardNumber", "creditcard"),
        ("Security code", "securitycode"),
        ("credentials", "credential"),
        ("passwords", "password"),
    ],
)
def test_sensitive_terms_still_match_as_words(name: str, term: str) -> None:
    assert sensitive_name(name) == term


# --- 5. ECMA-262 semantics of \s, \d, \w in pattern ---------------------------------------------


def pattern_ok(pattern: str, value: str) -> bool:
    c = compiled({"id": "t", "type": "text", "label": "T", "validation": {"pattern": pattern}})
    return validate_form_answer(c, {"t": value}).ok


@pytest.mark.parametrize(
    "ws",
    [
        " ",
        "\t",
        "\n",
        "\v",
        "\f",
        "\r",
        "\u00a0",
        "\ufeff",
        "\u2028",
        "\u2029",
        "\u3000",
        "\u1680",
        "\u2003",
        "\u202f",
    ],
)
def test_pattern_backslash_s_is_ecma_whitespace(ws: str) -> None:
    assert pattern_ok(r"^a\sb$", f"a{ws}b")
    assert pattern_ok(r"^a[\s]b$", f"a{ws}b")
    assert pattern_ok(r"^a[x\s]b$", f"a{ws}b")
    assert not pattern_ok(r"^a\Sb$", f"a{ws}b")
    assert not pattern_ok(r"^a[\S]b$", f"a{ws}b")


@pytest.mark.parametrize("not_ws", ["x", "\u200b", "\u0085", "\u180e", "٣"])
def test_pattern_backslash_s_rejects_non_ecma_whitespace(not_ws: str) -> None:
    # U+200B (zero width space), U+0085 (NEL) and U+180E are not WhiteSpace/LineTerminator in
    # ECMA-262 (Python's str.isspace() says U+0085 is)
    assert not pattern_ok(r"^a\sb$", f"a{not_ws}b")
    assert pattern_ok(r"^a\Sb$", f"a{not_ws}b")
    assert pattern_ok(r"^a[^\s]b$", f"a{not_ws}b")


def test_pattern_digit_and_word_stay_ascii() -> None:
    assert pattern_ok(r"^\d$", "7")
    assert not pattern_ok(r"^\d$", "٣")
    assert pattern_ok(r"^\D$", "٣")
    assert not pattern_ok(r"^[\d]$", "٣")
    assert pattern_ok(r"^\w+$", "abc_9")
    assert not pattern_ok(r"^\w$", "é")
    assert pattern_ok(r"^\W$", "é")
    assert pattern_ok(r"^a\b", "a é")
    assert pattern_ok(r"^a\b", "aé")  # é is not a word character: a boundary
    assert not pattern_ok(r"^a\B", "aé")
    # escapes that are not classes pass through, in and out of a class
    assert pattern_ok(r"^\\s$", "\\s")
    assert pattern_ok(r"^[\]\s]+$", "] ]")
    assert pattern_ok(r"^x$", "x")
    assert not pattern_ok(r"^x$", "x\n")  # ECMA $: the very end only


def test_pattern_is_compiled_once() -> None:
    from erlmcp_py.core import forms_pattern

    forms_pattern.ecma_pattern.cache_clear()
    c = compiled({"id": "t", "type": "text", "label": "T", "validation": {"pattern": "^q+$"}})
    misses = forms_pattern.ecma_pattern.cache_info().misses
    for _ in range(3):
        assert validate_form_answer(c, {"t": "qq"}).ok
    info = forms_pattern.ecma_pattern.cache_info()
    assert info.misses == misses == 1  # compiled when the definition was checked, then reused
    assert info.hits >= 3


def test_ecma_whitespace_is_ecma262_whitespace_and_line_terminators() -> None:
    import sys
    import unicodedata

    from erlmcp_py.core.forms_pattern import ECMA_WHITESPACE

    zs = {c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs"}
    assert zs | {0x09, 0x0B, 0x0C, 0xFEFF} | {0x0A, 0x0D, 0x2028, 0x2029} == ECMA_WHITESPACE


def test_pattern_negated_whitespace_in_classes() -> None:
    assert pattern_ok(r"^[^\s]+$", "ab\u200b")
    assert not pattern_ok(r"^[^\s]+$", "a\u00a0b")
    assert pattern_ok(r"^[^\S]+$", " \u3000\ufeff")
    assert not pattern_ok(r"^[^\S]+$", " x")
    assert pattern_ok(r"^[\S\s]{3}$", "a\u00a0\U0001f600")


# --- 6. one copy of the type/format words -------------------------------------------------------


def test_type_and_format_words_have_one_home() -> None:
    from erlmcp_py.core import forms_messages, validation

    assert forms_messages._TYPE_WORDS is validation._TYPE_WORDS
    assert forms_messages._FORMAT_WORDS is validation._FORMAT_WORDS
    result = validate_form_answer(compiled(FILE), {"doc": "a.txt"})
    assert [e.message for e in result.errors] == [
        "Document: must be an object of fields (got string)."
    ]
    uuid = compiled({"id": "u", "type": "text", "label": "U", "validation": {"format": "uuid"}})
    assert [e.message for e in validate_form_answer(uuid, {"u": "x"}).errors] == [
        "U: must be a UUID."
    ]


# --- 7. a controller that fails its own check -----------------------------------------------------


def test_bad_controller_does_not_add_spurious_required_error() -> None:
    c = compiled(
        {"id": "mode", "type": "text", "label": "Mode", "validation": {"maxLength": 3}},
        {
            "id": "reason",
            "type": "text",
            "label": "Reason",
            "requiredWhen": {"field": "mode", "operator": "not_equals", "value": "off"},
        },
    )
    # a valid "off" does not require reason; an invalid mode must only report the mode
    assert errors(c, {"mode": "off"}) == []
    assert errors(c, {"mode": "far too long"}) == [("mode", "maxLength")]
    assert errors(c, {"mode": "on"}) == [("reason", "required")]


def test_bad_controller_of_shown_required_field_adds_no_required_error() -> None:
    c = compiled(
        {"id": "mode", "type": "text", "label": "Mode", "validation": {"maxLength": 3}},
        {
            "id": "reason",
            "type": "text",
            "label": "Reason",
            "required": True,
            "showWhen": {"field": "mode", "operator": "not_equals", "value": "off"},
        },
        {**NAME, "required": True},
    )
    assert errors(c, {"mode": "far too long"}) == [("mode", "maxLength"), ("name", "required")]
    assert errors(c, {"mode": "on", "name": "n"}) == [("reason", "required")]
    assert errors(c, {"mode": "off", "name": "n"}) == []
