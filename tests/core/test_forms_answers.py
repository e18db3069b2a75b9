"""Checking answers to a compiled form: file sizes, hidden fields, messages, controllers;
every failing constraint of a field reported, never a submitted value."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings, strategies as st

from erlmcp_py.core.forms import CompiledForm, compile_form, validate_form_answer
from erlmcp_py.core.schema import FORMATS
from erlmcp_py.core.validation import summarize

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


# -- every failing constraint of a field is reported ---------------------------------------------

CHECKED_FILE = {
    "id": "doc",
    "type": "file",
    "label": "Document",
    "validation": {
        "maxSize": 100,
        "allowedMimeTypes": ["application/pdf", "text/plain"],
        "allowedExtensions": ["pdf", ".txt"],
    },
}


def test_a_file_too_large_and_of_the_wrong_extension_gets_both_errors() -> None:
    c = compiled(CHECKED_FILE)
    meta = {"filename": "report.exe", "content_type": "text/plain", "size": 101}
    assert errors(c, {"doc": meta}) == [("doc", "maxSize"), ("doc", "allowedExtensions")]
    wrong_all = {**meta, "content_type": "application/x-msdownload"}
    assert sorted(errors(c, {"doc": wrong_all})) == [
        ("doc", "allowedExtensions"),
        ("doc", "allowedMimeTypes"),
        ("doc", "maxSize"),
    ]


def test_a_file_name_that_is_not_text_is_judged_by_its_type_only() -> None:
    c = compiled(CHECKED_FILE)
    meta = {"filename": 7, "content_type": "text/plain", "size": 101}
    result = validate_form_answer(c, {"doc": meta})
    assert [(e.path, e.constraint) for e in result.errors] == [
        ("/doc/filename", "type"),
        ("/doc/size", "maxSize"),
    ]


def test_a_repeated_choice_and_a_choice_that_is_not_an_option_are_both_reported() -> None:
    sizes = {
        "id": "sizes",
        "type": "multi_select",
        "label": "Sizes",
        "options": ["s", "m", "l"],
        "validation": {"maxItems": 2},
    }
    result = validate_form_answer(compiled(sizes), {"sizes": ["s", "s", "xl"]})
    assert sorted((e.path, e.constraint) for e in result.errors) == [
        ("/sizes", "maxItems"),
        ("/sizes", "uniqueItems"),
        ("/sizes/2", "enum"),
    ]


FILE_NAMES = st.sampled_from(["a.pdf", "b.TXT", "c.exe", "pdf", "d.txt.exe", "e.Pdf"])
MIME_TYPES = st.sampled_from(["application/pdf", "text/plain", "image/png", "text/html"])


@settings(max_examples=150, deadline=None)
@given(name=FILE_NAMES, mime=MIME_TYPES, size=st.integers(0, 200))
def test_every_failing_file_check_is_reported(name: str, mime: str, size: int) -> None:
    c = compiled(CHECKED_FILE)
    expected = set()
    if size > 100:
        expected.add("maxSize")
    if mime not in ("application/pdf", "text/plain"):
        expected.add("allowedMimeTypes")
    if not name.lower().endswith((".pdf", ".txt")):
        expected.add("allowedExtensions")
    meta = {"filename": name, "content_type": mime, "size": size}
    found = errors(c, {"doc": meta})
    assert sorted(found) == sorted(("doc", e) for e in expected)


TEXT_RULES = {
    "id": "handle",
    "type": "text",
    "label": "Handle",
    "validation": {"minLength": 3, "maxLength": 8, "pattern": "^[a-z@.]*$", "format": "email"},
}


@settings(max_examples=150, deadline=None)
@given(value=st.text(alphabet="ab@.X ", max_size=12))
def test_every_failing_text_rule_is_reported(value: str) -> None:
    expected = set()
    if len(value) < 3:
        expected.add("minLength")
    if len(value) > 8:
        expected.add("maxLength")
    if re.fullmatch("[a-z@.]*", value) is None:
        expected.add("pattern")
    if not FORMATS["email"](value):
        expected.add("format")
    found = errors(compiled(TEXT_RULES), {"handle": value})
    assert sorted(found) == sorted(("handle", e) for e in expected)


# -- no error holds a submitted value ------------------------------------------------------------

EVERY_KIND = (
    {"id": "t", "type": "text", "label": "T", "validation": {"maxLength": 4, "pattern": "^a+$"}},
    {"id": "n", "type": "number", "label": "N", "validation": {"maximum": 3, "multipleOf": 2}},
    {"id": "d", "type": "date", "label": "D", "validation": {"minimum": "2030-01-01"}},
    {"id": "s", "type": "select", "label": "S", "options": ["a", "b"]},
    {"id": "m", "type": "multi_select", "label": "M", "options": ["a", "b"]},
    {"id": "u", "type": "url", "label": "U"},
    CHECKED_FILE,
)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_no_form_error_ever_holds_a_submitted_secret(data: st.DataObject) -> None:
    secret = "S3cr3t-" + data.draw(st.text("abcdefXYZ0123456789", min_size=8, max_size=12))
    carriers = st.one_of(
        st.just(secret),
        st.just(f"https://{secret.lower()}.example/{secret}"),
        st.just(f"https://10.0.0.1/{secret}"),
        st.just(f"2020-01-01T{secret}"),
        st.lists(st.sampled_from([secret, "a", "a", 1]), min_size=1, max_size=4),
        st.fixed_dictionaries(
            {
                "filename": st.sampled_from([f"{secret}.exe", secret, 5]),
                "content_type": st.sampled_from([secret, "text/plain"]),
                "size": st.sampled_from([1000, -1, secret]),
            }
        ),
        st.dictionaries(st.just(secret), st.just(secret), min_size=1),
    )
    c = compiled(*EVERY_KIND)
    answer = {f["id"]: data.draw(carriers) for f in EVERY_KIND if data.draw(st.booleans())}
    if data.draw(st.booleans()):
        answer[secret] = secret
    result = validate_form_answer(c, answer)
    text = repr(result.errors) + summarize(result.errors)
    assert secret not in text
    assert secret.lower() not in text
    assert secret[:10] not in text
