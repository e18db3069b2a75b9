"""Turning a failed check on one field's value into an :class:`AnswerError` with a message.

Separate so every check (JSON Schema keyword or native) words its errors the same way; like
every error of the runtime they never contain the submitted value.
"""

from __future__ import annotations

from typing import Any, Final

from erlmcp_py.core.forms._conditions import _Plan
from erlmcp_py.core.forms._fields import FileField, MultiSelectField
from erlmcp_py.core.validation import AnswerError
from erlmcp_py.core.wording import (
    FORMAT_WORDS,
    TYPE_WORDS,
    choice_message,
    json_pointer,
    keyword_message,
    list_options,
    plural,
    value_facts,
)

_MISSING: Final = object()


def _error(
    p: _Plan,
    constraint: str,
    expected: str | int | float | bool | tuple[str, ...],
    value: object,
    message: str,
    where: tuple[str | int, ...] = (),
) -> AnswerError:
    jt, length, items = value_facts(value) if value is not _MISSING else (None, None, None)
    return AnswerError(
        field=p.id,
        constraint=constraint,
        expected=expected,
        path=json_pointer(p.id, *where),
        message=f"{p.field.label}: {message}.",
        actual_type=jt,
        actual_length=length,
        actual_items=items,
    )


def _from_jsonschema(
    p: _Plan, keyword: str, expected: Any, value: object, where: tuple[Any, ...]
) -> AnswerError:
    """Turn one jsonschema error on a field's value into an :class:`AnswerError`."""
    jt, length, items = value_facts(value)
    f = p.field
    exp: str | int | float | bool | tuple[str, ...] = (
        expected if isinstance(expected, str | int | float | bool) else str(expected)
    )
    in_file = isinstance(f, FileField) and bool(where)
    if keyword == "type":
        msg = f"must be {TYPE_WORDS.get(expected, expected)} (got {jt})"
        if where and isinstance(f, MultiSelectField):
            msg = choice_message(where[0], "type", jt)
    elif keyword == "enum":
        exp = tuple(str(v) for v in expected)
        if in_file:
            keyword, msg = "allowedMimeTypes", f"the file type must be one of: {', '.join(exp)}"
        else:
            shown = list_options(tuple((v, None) for v in exp))
            msg = choice_message(where[0], "enum", shown) if where else f"must be one of: {shown}"
    elif keyword == "format":
        msg = f"must be {FORMAT_WORDS.get(expected, expected)}"
    elif keyword == "pattern":
        msg = "does not have the expected form"
    elif keyword == "maximum" and in_file:
        keyword, msg = "maxSize", f"the file must be at most {plural(expected, 'byte')}"
    elif keyword == "minimum" and in_file:  # the size's own floor, 0
        msg = "the file size must not be negative"
    elif keyword == "required":
        exp, msg = True, "the file's name, type and size are required"
    else:  # the shared wording; the property schemas use no keyword it does not know
        msg = keyword_message(keyword, expected, length, items) or f"does not satisfy {keyword}"
    return AnswerError(
        field=p.id,
        constraint=keyword,
        expected=exp,
        path=json_pointer(p.id, *where),
        message=f"{f.label}: {msg}.",
        actual_type=jt,
        actual_length=length,
        actual_items=items,
    )
