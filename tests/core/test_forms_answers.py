"""Checking answers to a compiled form: file sizes, hidden fields, messages, controllers."""

from __future__ import annotations

from typing import Any

from erlmcp_py.core.forms import CompiledForm, compile_form, validate_form_answer

V = "2025-11-25"


def compiled(*fields: dict[str, Any], **extra: Any) -> CompiledForm:
    return compile_form({"id": "f", "title": "A form", "fields": list(fields), **extra}, V)


def errors(c: CompiledForm, content: object) -> list[tuple[str | None, str]]:
    result = validate_form_answer(c, content)
    assert result.ok == (not result.errors)
    return [(e.field, e.constraint) for e in result.errors]


NAME = {"id": "name", "type": "text", "label": "Name"}
FILE = {"id": "doc", "type": "file", "label": "Document", "validation": {"maxSize": 100}}


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


def test_hidden_field_default_is_part_of_the_answer() -> None:
    # ``hidden`` is a rendering hint and absent fields take their default
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


def test_type_and_format_messages_use_the_shared_wording() -> None:
    result = validate_form_answer(compiled(FILE), {"doc": "a.txt"})
    assert [e.message for e in result.errors] == [
        "Document: must be an object of fields (got string)."
    ]
    uuid = compiled({"id": "u", "type": "text", "label": "U", "validation": {"format": "uuid"}})
    assert [e.message for e in validate_form_answer(uuid, {"u": "x"}).errors] == [
        "U: must be a UUID."
    ]


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


def test_a_formatted_text_field_refuses_a_non_string_by_its_type() -> None:
    email = {"id": "e", "type": "text", "label": "E", "validation": {"format": "email"}}
    uuid = {"id": "u", "type": "text", "label": "U", "validation": {"format": "uuid"}}
    assert errors(compiled(email, uuid), {"e": 5, "u": 7}) == [("e", "type"), ("u", "type")]
