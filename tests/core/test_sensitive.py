"""The sensitive-input detector: raw schemas, Python types, the name list and its overrides."""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

import pytest
from hypothesis import given, strategies as st
from pydantic import BaseModel, Field, SecretBytes, SecretStr

from erlmcp_py.core.schema import check_requested_schema
from erlmcp_py.core.sensitive import (
    DEFAULT_SENSITIVE_NAMES,
    SENSITIVE_MARKER,
    SensitiveField,
    form_type_sensitive_fields,
    schema_sensitive_fields,
    sensitive_name,
    strip_sensitive_markers,
    type_sensitive_fields,
)
from erlmcp_py.core.typeschema import schema_for


def found(props: dict[str, Any], **kw: Any) -> list[tuple[str, str]]:
    schema = {"type": "object", "properties": props}
    return [(f.name, f.reason) for f in schema_sensitive_fields(schema, **kw)]


# -- raw schemas ---------------------------------------------------------------------------------


def test_format_password_and_write_only_are_sensitive_whatever_the_name() -> None:
    assert found({"x": {"type": "string", "format": "password"}}) == [
        ("x", "its format is password")
    ]
    assert found({"y": {"type": "string", "writeOnly": True}}) == [("y", "it is writeOnly")]


@pytest.mark.parametrize(
    ("key", "term"),
    [
        ("password", "password"),
        ("passwd", "passwd"),
        ("api_key", "apikey"),
        ("apiKey", "apikey"),
        ("token", "token"),
        ("client_secret", "clientsecret"),
        ("secret", "secret"),
        ("card_number", "cardnumber"),
        ("cvv", "cvv"),
        ("senha", "senha"),
    ],
)
def test_names_of_the_list_are_sensitive(key: str, term: str) -> None:
    assert found({key: {"type": "string"}}) == [(key, f"its name looks like {term!r}")]


def test_a_title_can_name_the_secret() -> None:
    assert found({"k": {"type": "string", "title": "Card number"}}) == [
        ("k", "its title looks like 'cardnumber'")
    ]


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "string"},  # an innocent name
        {"type": "boolean", "title": "Remember password"},  # a choice names no secret
        {"type": "string", "enum": ["token", "secret"]},
        {"type": "array", "items": {"type": "string", "enum": ["a"]}},
    ],
)
def test_choices_and_innocent_fields_are_not_sensitive(prop: dict[str, Any]) -> None:
    assert found({"remember": prop}) == []


def test_the_marker_overrides_in_both_directions() -> None:
    assert found({"token": {"type": "string", SENSITIVE_MARKER: False}}) == []
    assert found({"city": {"type": "string", SENSITIVE_MARKER: True}}) == [
        ("city", "it is marked x-sensitive")
    ]
    # false wins over the type's own signals too: the schema's author said so
    assert found({"x": {"type": "string", "format": "password", SENSITIVE_MARKER: False}}) == []


def test_stripped_markers_leave_a_schema_the_wire_accepts() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "format": "password"},
            "b": {"type": "string", "writeOnly": True, SENSITIVE_MARKER: True},
            "c": {"type": "string", "format": "email"},
        },
        "required": ["a"],
    }
    plain = strip_sensitive_markers(schema)
    check_requested_schema(plain, "2026-07-28")
    assert plain["properties"] == {
        "a": {"type": "string"},
        "b": {"type": "string"},
        "c": {"type": "string", "format": "email"},
    }
    assert plain["required"] == ["a"]
    assert schema["properties"]["a"]["format"] == "password"  # the input is untouched


def test_describe_names_the_field_and_why_never_a_value() -> None:
    assert SensitiveField("api_key", "its name looks like 'apikey'").describe() == (
        "field 'api_key' asks for sensitive data (its name looks like 'apikey')"
    )


# -- the name list and the server's policy -------------------------------------------------------


def test_server_policy_adds_and_removes_names() -> None:
    names = DEFAULT_SENSITIVE_NAMES.with_changes(add=["Vault code", "iban"], remove=["token"])
    assert sensitive_name("vault_code", names) == "vaultcode"
    assert sensitive_name("vaultCodes", names) == "vaultcode"  # plural
    assert sensitive_name("token", names) is None
    assert sensitive_name("api_token", names) == "apitoken"  # a compound of its own
    assert sensitive_name("vault_code") is None  # the default list is unchanged
    assert found({"token": {"type": "string"}}, names=names) == []


@given(st.text(max_size=60))
def test_any_text_is_matched_without_error(text: str) -> None:
    term = sensitive_name(text)
    assert term is None or isinstance(term, str)


# -- Python types --------------------------------------------------------------------------------


class Login(BaseModel):
    user: str
    api_key: SecretStr


class Keys(BaseModel):
    blob: SecretBytes
    note: SecretStr | None = None
    token: str = Field(json_schema_extra={SENSITIVE_MARKER: False})
    max_tokens: int = 5


@dataclasses.dataclass
class Account:
    email: str
    password: str


class Card(TypedDict):
    holder: str
    card_number: str


def type_found(tp: Any) -> list[tuple[str, str]]:
    form = schema_for(tp)
    return [(f.name, f.reason) for f in type_sensitive_fields(tp, form.schema)]


def test_secret_types_are_sensitive() -> None:
    assert type_found(Login) == [("api_key", "its format is password")]
    assert type_found(Keys) == [
        ("blob", "its format is password"),
        ("note", "its format is password"),  # Optional[SecretStr]
    ]
    assert type_found(SecretStr) == [("value", "its format is password")]


def test_dataclass_and_typeddict_fields_are_checked_by_name() -> None:
    assert type_found(Account) == [("password", "its name looks like 'password'")]
    assert type_found(Card) == [("card_number", "its name looks like 'cardnumber'")]


def test_innocent_types_are_not_sensitive() -> None:
    assert type_found(int) == []
    assert type_found(bool) == []


def test_a_secret_field_is_a_plain_string_on_the_form_and_a_secret_in_the_answer() -> None:
    form = schema_for(Login)
    assert form.schema["properties"]["api_key"] == {"type": "string", "title": "API key"}
    login = form.parse({"user": "ada", "api_key": "k-1"})
    assert isinstance(login.api_key, SecretStr)
    assert login.api_key.get_secret_value() == "k-1"
    assert "k-1" not in repr(login)
    keys = schema_for(Keys).parse({"blob": "b", "token": "t"})
    assert keys.blob.get_secret_value() == b"b"


def test_a_secret_field_cannot_have_a_default() -> None:
    class Bad(BaseModel):
        api_key: SecretStr = SecretStr("shown")

    with pytest.raises(TypeError, match="field 'api_key': a secret field cannot have a default"):
        schema_for(Bad)


class _Vault(BaseModel):
    vault_key: str
    api_key: SecretStr


def test_a_form_type_is_judged_per_name_list_and_once_for_each() -> None:
    form = schema_for(_Vault)
    first = form_type_sensitive_fields(form)
    assert [f.name for f in first] == ["api_key"]
    assert form_type_sensitive_fields(form) is first  # decided once for this list
    wider = DEFAULT_SENSITIVE_NAMES.with_changes(add=["vault key"])
    assert [f.name for f in form_type_sensitive_fields(form, wider)] == ["vault_key", "api_key"]
