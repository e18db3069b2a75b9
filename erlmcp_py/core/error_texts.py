"""An answer error worded in a locale, from its constraint and parameters, through the catalog.

An :class:`~erlmcp_py.core.validation.AnswerError` carries one English sentence for a
re-prompt (:attr:`~erlmcp_py.core.validation.AnswerError.message`) and the facts it was
worded from: the constraint keyword, what the constraint expects, the JSON pointer, the
submitted value's JSON type. :func:`error_text` words those facts again in any locale of
:mod:`erlmcp_py.core.i18n`, as a sentence about one field that does not name the field (the
hosted page writes it under the field's label). A constraint this module does not know (a
type's own validator, a cross-field rule with the application's own message) has no wording
here: the caller shows the error's own message.

Like every error text it states nothing about the submitted value. Pure: no I/O, no clock.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from erlmcp_py.core.i18n import CATALOG, Texts

__all__ = ["error_text"]


class _Error(Protocol):
    """What :func:`error_text` reads of an :class:`~erlmcp_py.core.validation.AnswerError`."""

    @property
    def field(self) -> str | None: ...
    @property
    def constraint(self) -> str: ...
    @property
    def expected(self) -> Any: ...
    @property
    def path(self) -> str: ...
    @property
    def actual_type(self) -> str | None: ...


#: Bounds worded as "at least / at most / greater than ..." a number.
_BOUNDS: Final = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
#: Checks whose text takes the allowed values as a list.
_LISTS: Final = frozenset({"allowedMimeTypes", "allowedExtensions", "allowedSchemes"})
#: Checks worded by one fixed sentence.
_FIXED: Final = frozenset(
    {"finite", "uniqueItems", "pattern", "blockLocalhost", "blockPrivateIPs", "urlPolicy"}
)
_OPTIONS: Final = frozenset({"enum", "oneOf", "anyOf"})


def _number(value: object, locale: str) -> str | None:
    """A bound as the locale writes it (``0.5`` -> ``0,5`` in pt-BR); ``None``: not a
    number."""
    if type(value) is int:
        return str(value)
    if type(value) is float:
        text = str(int(value)) if value.is_integer() else str(value)
        return text.replace(".", ",") if locale == "pt-BR" else text
    return None


def _what(word: object) -> str | None:
    key = f"mcp.answer.word.{word}"
    return key if isinstance(word, str) and key in CATALOG else None


def error_text(error: _Error, locale: str) -> str | None:
    """``error`` as one sentence in ``locale`` that does not name its field; ``None`` when
    this module has no wording for it (show :attr:`AnswerError.message` then).

    Args:
        error: An :class:`~erlmcp_py.core.validation.AnswerError`.
        locale: One of :data:`~erlmcp_py.core.i18n.LOCALES`.

    Raises:
        ValueError: ``locale`` is not one of the catalog's locales.
    """
    t = Texts(locale)
    kind, expected = error.constraint, error.expected
    depth = error.path.count("/")  # 1: the field's value; 2: a choice of it, or a file's part
    if kind in _OPTIONS:
        return t("mcp.answer.error.option")
    if error.field is None or error.field == "":  # the answer as a whole
        if kind == "type":
            return t("mcp.answer.error.not_object")
        if kind == "additionalProperties":
            return t("mcp.answer.error.additionalProperties")
        return None
    if kind == "required":  # a field missing, or present (a file) without a part it needs
        present = error.actual_type is not None
        return t("mcp.answer.error.file_parts" if present else "mcp.answer.error.required")
    # a file's checks are on its parts (``/cv/size``); these read the same at any depth
    if kind in _LISTS and isinstance(expected, tuple | list):
        return t(f"mcp.answer.error.{kind}", allowed=", ".join(str(v) for v in expected))
    if kind == "maxSize" and type(expected) is int:
        return t.count("mcp.answer.error.maxSize", expected)
    if kind in _FIXED:
        return t(f"mcp.answer.error.{kind}")
    if depth > 1:
        return None
    if kind in ("type", "format"):
        key = _what(expected)
        return None if key is None else t("mcp.answer.error.must_be", what=t(key))
    if kind in ("minLength", "maxLength") and type(expected) is int:
        return t.count(f"mcp.answer.error.{kind}", expected)
    if kind in ("minItems", "maxItems") and type(expected) is int:
        return t(f"mcp.answer.error.{kind}", limit=expected)
    if kind in _BOUNDS:
        limit = _number(expected, locale)
        if limit is not None:
            return t(f"mcp.answer.error.{kind}", limit=limit)
        if kind in ("minimum", "maximum") and isinstance(expected, str):  # a date's bound
            after = kind == "minimum"
            key = "mcp.answer.error.on_or_after" if after else "mcp.answer.error.on_or_before"
            return t(key, limit=expected)
    return None
