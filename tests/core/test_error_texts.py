"""Answer errors worded again in each locale from their constraint and parameters."""

from __future__ import annotations

from typing import Any

import pytest

from erlmcp_py.core.error_texts import error_text
from erlmcp_py.core.forms import compile_form, load_form, validate_form_answer
from erlmcp_py.core.i18n import LOCALES
from erlmcp_py.core.validation import AnswerError, validate_answer


def err(
    constraint: str,
    expected: Any,
    path: str = "/f",
    field: str | None = "f",
    actual_type: str | None = "string",
) -> AnswerError:
    message = f"{field}: the validator's words."
    return AnswerError(field, constraint, expected, path, message, actual_type)


@pytest.mark.parametrize(
    ("error", "en", "pt"),
    [
        (
            err("required", True, actual_type=None),
            "This field is required.",
            "Este campo é obrigatório.",
        ),
        (err("type", "integer"), "Must be a whole number.", "Deve ser um número inteiro."),
        (
            err("format", "date-time"),
            "Must be a date and time like 2025-01-31T09:30:00Z.",
            "Deve ser uma data e hora como 2025-01-31T09:30:00Z.",
        ),
        (
            err("minLength", 1),
            "Must be at least 1 character long.",
            "Deve ter pelo menos 1 caractere.",
        ),
        (
            err("maxLength", 8),
            "Must be at most 8 characters long.",
            "Deve ter no máximo 8 caracteres.",
        ),
        (err("minimum", 0.5), "Must be at least 0.5.", "Deve ser no mínimo 0,5."),
        (err("maximum", 120.0), "Must be at most 120.", "Deve ser no máximo 120."),
        (err("exclusiveMinimum", 0), "Must be greater than 0.", "Deve ser maior que 0."),
        (
            err("minimum", "2026-01-01"),
            "Must be on or after 2026-01-01.",
            "Deve ser igual ou posterior a 2026-01-01.",
        ),
        (err("oneOf", ("a", "b")), "Choose one of the options.", "Escolha uma das opções."),
        (err("enum", ("a",), "/f/1"), "Choose one of the options.", "Escolha uma das opções."),
        (err("maxItems", 2), "Choose at most 2.", "Escolha no máximo 2."),
        (
            err("uniqueItems", True),
            "Choose each option only once.",
            "Escolha cada opção uma só vez.",
        ),
        (
            err("allowedExtensions", (".pdf", ".png")),
            "The file name must end with one of: .pdf, .png.",
            "O nome do arquivo deve terminar com um destes: .pdf, .png.",
        ),
        (
            err("maxSize", 1000),
            "The file must be at most 1000 bytes.",
            "O arquivo deve ter no máximo 1000 bytes.",
        ),
        (
            err("required", True, actual_type="object"),  # a file without its size
            "The file's name, type and size are required.",
            "O nome, o tipo e o tamanho do arquivo são obrigatórios.",
        ),
        (
            err("additionalProperties", ("f",), "", None),
            "The answer has fields that the form does not have.",
            "A resposta tem campos que o formulário não tem.",
        ),
        (
            err("type", "object", "", None),
            "The answer must be an object of fields.",
            "A resposta deve ser um objeto com campos.",
        ),
    ],
)
def test_an_error_is_worded_in_each_locale(error: AnswerError, en: str, pt: str) -> None:
    assert error_text(error, "en-US") == en
    assert error_text(error, "pt-BR") == pt


@pytest.mark.parametrize(
    "error",
    [
        err("model", "value_error"),  # a type's own validator: only its message says why
        err("rule", "f ge g"),  # a form's rule, maybe with the application's own message
        err("format", "a-format-of-tomorrow"),
        err("maxLength", "uri"),  # a URL field's length, worded by its policy
        err("type", "string", "/f/filename"),
        err("maxBytes", "at most 10 bytes of JSON", "", ""),
    ],
)
def test_an_error_without_a_wording_here_has_none(error: AnswerError) -> None:
    assert error_text(error, "pt-BR") is None


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 4},
        "email": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date"},
        "age": {"type": "integer", "minimum": 18, "maximum": 99},
        "plan": {"type": "string", "enum": ["free", "pro"]},
        "tags": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["a", "b", "c"]},
        },
        "ok": {"type": "boolean"},
        "ratio": {"type": "number"},
    },
    "required": ["name", "ok"],
}
BAD_ANSWERS = [
    {"name": "x", "email": "nope", "when": "31/01/2026", "age": 12, "plan": "gold"},
    {"name": "xxxxx", "age": 100, "tags": ["a", "a", "d"], "ok": "yes"},
    {"name": 3, "age": 1.5, "tags": [], "ok": True, "extra": 1},
    {"ratio": float("nan"), "tags": ["a", "b", "c"], "ok": 1},
    ["not", "an", "object"],
]
FORM = load_form(
    {
        "id": "f",
        "title": "F",
        "fields": [
            {"id": "start", "type": "date", "label": "Start",
             "validation": {"minimum": "2026-01-01"}},
            {"id": "site", "type": "url", "label": "Site"},
            {"id": "cv", "type": "file", "label": "CV",
             "validation": {"maxSize": 10, "allowedExtensions": ["pdf"],
                            "allowedMimeTypes": ["application/pdf"]}},
            {"id": "code", "type": "text", "label": "Code", "validation": {"pattern": "^[a-z]+$"}},
        ],
    }
)  # fmt: skip
BAD_FORM_ANSWERS = [
    {
        "start": "2025-12-31",
        "site": "http://example.com/",
        "cv": {"filename": "cv.exe", "content_type": "text/plain", "size": 99},
    },
    {"site": "https://127.0.0.1/", "cv": {"filename": "cv.pdf"}, "code": "ABC"},
]


@pytest.mark.parametrize("locale", LOCALES)
def test_every_error_of_the_standard_validators_is_worded_in_each_locale(locale: str) -> None:
    errors = [e for a in BAD_ANSWERS for e in validate_answer(SCHEMA, a).errors]
    compiled = compile_form(FORM, "2025-11-25")
    errors += [e for a in BAD_FORM_ANSWERS for e in validate_form_answer(compiled, a).errors]
    constraints = {e.constraint for e in errors}
    assert {"minLength", "format", "minimum", "enum", "uniqueItems", "finite"} <= constraints
    assert {"allowedExtensions", "allowedMimeTypes", "maxSize", "allowedSchemes"} <= constraints
    assert "pattern" in constraints
    assert [e for e in errors if error_text(e, locale) is None] == []
