"""Which fields force URL mode: sensitive names as whole words, hidden and shown fields."""

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


def test_the_server_policy_changes_which_fields_force_url_mode() -> None:
    from erlmcp_py.core.sensitive import DEFAULT_SENSITIVE_NAMES

    vault = {"id": "vault_code", "type": "text", "label": "Vault code"}
    form = {"id": "f", "title": "A form", "fields": [NAME, vault]}
    assert compile_form(form, V).needs_url_mode is None
    added = DEFAULT_SENSITIVE_NAMES.with_changes(add=["vault code"])
    assert compile_form(form, V, sensitive_names=added).url_mode_fields == ("vault_code",)
    pin = {"id": "pin", "type": "text", "label": "PIN"}
    form = {"id": "f", "title": "A form", "fields": [NAME, pin]}
    assert compile_form(form, V).url_mode_fields == ("pin",)
    removed = DEFAULT_SENSITIVE_NAMES.with_changes(remove=["pin"])
    assert compile_form(form, V, sensitive_names=removed).needs_url_mode is None
