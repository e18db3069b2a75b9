"""The hosted page's fields: a form's schema read as widgets, and a posted form read back.

:func:`page_fields` turns the object schema of a :class:`~erlmcp_py.actors.pages.PageQuestion`
(a ``requestedSchema``, a type's schema or a form definition's server-side JSON Schema) and its
widget facts into one :class:`PageField` per property, in schema order. :func:`content_from_form`
reads an ``application/x-www-form-urlencoded`` submission back into the JSON answer the
runtime validates: text as strings, numbers as numbers, a switch as a boolean, a multi choice
as a list, a file as its metadata object. A value that does not parse (``abc`` for a number)
is kept as text, so the runtime's validation reports the field, never the value.
:func:`page_errors` places the errors of a refused answer: each under its field, worded in the
page's locale, and any other (about the answer as a whole, or a field the page does not show)
above the form.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from erlmcp_py.actors.pages import PageQuestion
from erlmcp_py.core.error_texts import error_text
from erlmcp_py.core.i18n import Texts
from erlmcp_py.core.validation import AnswerError

__all__ = ["PageField", "content_from_form", "page_errors", "page_fields"]

#: HTML's valid floating-point number (what a number input submits), and an integer.
_FLOAT: Final = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_INTEGER: Final = re.compile(r"-?[0-9]+")

Kind = Literal[
    "text",
    "textarea",
    "password",
    "email",
    "url",
    "date",
    "datetime",
    "number",
    "integer",
    "switch",
    "select",
    "multi",
    "file",
]

#: The rules the page checks before submitting (the runtime checks every rule after).
_RULES: Final = (
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
)
_TEXTAREA_FROM: Final = 200  # a free text allowed this long gets a text area


@dataclass(frozen=True, slots=True)
class PageField:
    """One field of the page.

    Attributes:
        key: The property name (the answer's key and the input's ``name``).
        index: Its position (element ids are ``f-{index}``: keys may hold any character).
        kind: The widget.
        title: The label (the key when the schema has no ``title``).
        description: Help text, or ``None``.
        required: Whether an answer must have it.
        default: The schema's ``default``, or ``None``.
        options: ``(value, title)`` of a choice.
        rules: The schema's checkable rules (``minLength``, ``maximum``, ``pattern`` ...).
        placeholder: A placeholder, or ``None``.
        accept: A file input's ``accept``, or ``None``.
        rows: A text area's rows.
    """

    key: str
    index: int
    kind: Kind
    title: str
    description: str | None
    required: bool
    default: Any
    options: tuple[tuple[str, str], ...]
    rules: Mapping[str, Any]
    placeholder: str | None
    accept: str | None
    rows: int

    @property
    def id(self) -> str:
        """The input's element id."""
        return f"f-{self.index}"


def _options(prop: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    enum = prop.get("enum")
    if isinstance(enum, list):
        names = prop.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(enum) else enum
        return tuple((str(v), str(t)) for v, t in zip(enum, titles, strict=True))
    for key in ("oneOf", "anyOf"):
        branches = prop.get(key)
        if isinstance(branches, list):
            return tuple(
                (str(b["const"]), str(b.get("title", b["const"])))
                for b in branches
                if isinstance(b, Mapping) and "const" in b
            )
    return ()


def _kind(prop: Mapping[str, Any], widget: Mapping[str, Any]) -> Kind:
    if widget.get("kind") == "file":
        return "file"
    kind = prop.get("type")
    if kind == "boolean":
        return "switch"
    if kind == "array":
        return "multi"
    if kind == "integer":
        return "integer"
    if kind == "number":
        return "number"
    if _options(prop):
        return "select"
    if widget.get("sensitive"):
        return "password"
    fmt = prop.get("format")
    if fmt == "email":
        return "email"
    if fmt == "uri":
        return "url"
    if fmt == "date":
        return "date"
    if fmt == "date-time":
        return "datetime"
    longest = prop.get("maxLength")
    if widget.get("kind") == "textarea" or (isinstance(longest, int) and longest >= _TEXTAREA_FROM):
        return "textarea"
    return "text"


def page_fields(question: PageQuestion) -> tuple[PageField, ...]:
    """The page's fields of ``question``, in schema order."""
    schema = question.schema
    props = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    out = []
    for index, (key, prop) in enumerate((props or {}).items()):
        if not isinstance(prop, Mapping):
            continue
        widget = question.widgets.get(key, {})
        kind = _kind(prop, widget)
        options = _options(prop.get("items", {})) if kind == "multi" else _options(prop)
        titles = widget.get("titles")
        if isinstance(titles, Mapping):
            options = tuple((v, str(titles.get(v, t))) for v, t in options)
        title = prop.get("title")
        description = prop.get("description", widget.get("help"))
        rows = widget.get("rows")
        out.append(
            PageField(
                key=key,
                index=index,
                kind=kind,
                title=title if isinstance(title, str) and title else key,
                description=description if isinstance(description, str) else None,
                required=key in needed,
                default=prop.get("default"),
                options=options,
                rules={k: prop[k] for k in _RULES if k in prop},
                placeholder=widget.get("placeholder"),
                accept=widget.get("accept"),
                rows=rows if isinstance(rows, int) and rows > 0 else 4,
            )
        )
    return tuple(out)


def _number(text: str, integer: bool) -> Any:
    """A number field's value: the number a browser's number input sends (HTML's valid
    floating-point number, ASCII digits only), else the text as sent. Python's ``float`` and
    ``int`` also read ``1_000``, other scripts' digits, ``inf`` and ``nan``: never here."""
    if (_INTEGER if integer else _FLOAT).fullmatch(text) is None:
        return text  # not a number: the runtime reports the field's type
    try:
        value = int(text) if integer else float(text)
    except ValueError:  # more digits than int() converts
        return text
    if isinstance(value, float):
        if not math.isfinite(value):  # past a double's range
            return text
        if value.is_integer() and "." not in text:
            return int(value)
    return value


def content_from_form(
    fields: Sequence[PageField], form: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """The JSON answer of a posted form.

    A field left empty is left out (``required`` then catches it), except a switch, which is
    ``false`` when not checked, and a required multi choice, which is ``[]``.
    """
    content: dict[str, Any] = {}
    for f in fields:
        values = [v for v in form.get(f.key, ()) if isinstance(v, str)]
        if f.kind == "switch":
            content[f.key] = bool(values) and values[-1] in ("true", "on")
            continue
        if f.kind == "multi":
            if values or f.required:
                content[f.key] = values
            continue
        last = values[-1] if values else ""
        if last == "":
            continue
        if f.kind in ("number", "integer"):
            content[f.key] = _number(last.strip(), f.kind == "integer")
        elif f.kind == "file":
            try:
                content[f.key] = json.loads(last)
            except ValueError:
                content[f.key] = last  # not file metadata: the runtime reports the field
        else:
            content[f.key] = last
    return content


def _own_words(error: AnswerError, field: PageField | None) -> str:
    """The error's own message, less the field name it starts with when written under it."""
    message = error.message
    if field is not None:
        for name in (field.key, field.title):
            if message.startswith(f"{name}: "):
                rest = message[len(name) + 2 :]
                return rest[:1].upper() + rest[1:]
    return message


def page_errors(
    fields: Sequence[PageField], errors: Sequence[object], locale: str
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Where the errors of a refused answer show: per field key, the sentences under it; and
    the sentences about the answer as a whole (or a field the page has not), in order.

    An error is worded in ``locale`` from its constraint (:func:`error_text`); one this
    runtime has no wording for (a type's own validator, an application's rule) shows its own
    message. Anything that is not an :class:`AnswerError` shows as text above the form, and a
    refusal that gives no reason still says the answer was not accepted.
    """
    by_key = {f.key: f for f in fields}
    per_field: dict[str, list[str]] = {}
    general: list[str] = []
    for error in errors:
        if not isinstance(error, AnswerError):
            general.append(str(error))
            continue
        field = by_key.get(error.field) if isinstance(error.field, str) else None
        if field is None:
            # the answer as a whole is worded in the locale; an error of a field the page has
            # not keeps its own message, which names the field
            worded = error_text(error, locale) if not error.field else None
            general.append(worded or error.message)
            continue
        said = per_field.setdefault(field.key, [])
        text = error_text(error, locale) or _own_words(error, field)
        if text not in said:
            said.append(text)
    if not per_field and not general:
        general.append(Texts(locale)("mcp.elicitation.page.refused"))
    return (
        {key: " ".join(texts) for key, texts in per_field.items()},
        tuple(dict.fromkeys(general)),
    )
