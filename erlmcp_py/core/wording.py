"""The wording of answer errors, shared by every validator so each words an error the same way,
and of a field's default label (:func:`field_title`).

:mod:`~erlmcp_py.core.validation` (answers to a requestedSchema) and the form definition
language (:mod:`~erlmcp_py.core.forms`) build their
:class:`~erlmcp_py.core.validation.AnswerError` messages from these pieces. A message states
about the submitted value only the facts :func:`value_facts` gives (JSON type, length, item
count), never the value.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "FORMAT_WORDS",
    "MAX_LISTED_OPTIONS",
    "TYPE_WORDS",
    "choice_message",
    "field_title",
    "json_pointer",
    "json_type",
    "keyword_message",
    "list_options",
    "plural",
    "value_facts",
]

#: At most this many options are listed in an error message.
MAX_LISTED_OPTIONS: Final = 10


def json_type(value: object) -> str:
    """Name the JSON type of a decoded JSON value (``"integer"`` for ints, ``"number"`` for
    floats, ``"boolean"`` for bools; ``"unsupported"`` for anything JSON cannot carry)."""
    t = type(value)
    if t is str:
        return "string"
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    if t is float:
        return "number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, str):
        return "string"
    return "unsupported"


#: How a message names a JSON type ("must be ...").
TYPE_WORDS: Final = {
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "a list of choices",
    "object": "an object of fields",
}
#: How a message names a string format ("must be ...").
FORMAT_WORDS: Final = {
    "email": "a valid email address",
    "uri": "an absolute URI with a scheme (e.g. https://example.com/)",
    "date": "a date as YYYY-MM-DD",
    "date-time": "a date and time in RFC 3339 form (e.g. 2025-01-31T09:30:00Z)",
    # formats of the form definition language's text fields (its messages use these words too)
    "uuid": "a UUID",
    "hostname": "a host name",
    "ipv4": "an IPv4 address",
    "ipv6": "an IPv6 address",
}


def _num(v: object) -> str:
    if type(v) is float and v.is_integer():
        return str(int(v))
    return str(v)


def list_options(options: tuple[tuple[str, str | None], ...]) -> str:
    """The options of a select as a message lists them: ``title (value)`` or ``value``, at
    most :data:`MAX_LISTED_OPTIONS`, then how many more."""
    shown = [f"{t} ({v})" if t is not None else v for v, t in options[:MAX_LISTED_OPTIONS]]
    more = len(options) - MAX_LISTED_OPTIONS
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def plural(n: int, word: str) -> str:
    """``"1 choice"``, ``"2 choices"``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def keyword_message(
    keyword: str, expected: Any, length: int | None, items: int | None
) -> str | None:
    """The wording of a failed length, bound or item-count keyword; ``None`` for any other."""
    if keyword == "minLength":
        return f"must be at least {plural(expected, 'character')} long (got {length})"
    if keyword == "maxLength":
        return f"must be at most {plural(expected, 'character')} long (got {length})"
    if keyword == "minimum":
        return f"must be at least {_num(expected)}"
    if keyword == "maximum":
        return f"must be at most {_num(expected)}"
    if keyword == "exclusiveMinimum":
        return f"must be greater than {_num(expected)}"
    if keyword == "exclusiveMaximum":
        return f"must be less than {_num(expected)}"
    if keyword == "multipleOf":
        return f"must be a multiple of {_num(expected)}"
    if keyword == "minItems":
        return f"needs at least {plural(expected, 'choice')} (got {items})"
    if keyword == "maxItems":
        return f"allows at most {plural(expected, 'choice')} (got {items})"
    if keyword == "uniqueItems":
        return "must not repeat a choice"
    return None


def value_facts(value: object) -> tuple[str, int | None, int | None]:
    """The only facts an error may state about a value: JSON type, length, item count."""
    jt = json_type(value)
    if jt == "string":
        return jt, len(value), None  # type: ignore[arg-type]
    if jt == "array":
        return jt, None, len(value)  # type: ignore[arg-type]
    return jt, None, None


def json_pointer(*tokens: str | int) -> str:
    """An RFC 6901 JSON pointer to ``tokens`` (``~`` and ``/`` escaped)."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def choice_message(index: int, keyword: str, text: str) -> str:
    """The wording of an error on one choice of a multi-select: ``keyword`` is ``"type"`` (the
    choice is not text; ``text`` is its JSON type) or ``"enum"`` (``text`` lists the options)."""
    if keyword == "type":
        return f"choice {index} must be one of the options, as text (got {text})"
    return f"choice {index} must be one of: {text}"


#: Words a label writes in capitals (``api_key`` -> "API key").
_ACRONYMS: Final = frozenset(
    {"api", "cpf", "cvc", "cvv", "dns", "http", "https", "iban", "id", "ip", "json", "otp",
     "pin", "sms", "ssh", "ssn", "tls", "uri", "url", "uuid", "vat"}
)  # fmt: skip
#: Where a camelCase name changes word: ``spentOn``, ``HTTPServer`` (ASCII case only).
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def field_title(name: str) -> str:
    """A field name as a label: ``spent_on`` and ``spentOn`` -> "Spent on", ``api_key`` ->
    "API key", ``userID`` -> "User ID" (the name itself when it has no word)."""
    words = [w for w in re.split(r"[\s_\-]+", _CAMEL.sub(" ", name)) if w]
    if not words:
        return name
    out = []
    for i, word in enumerate(words):
        if word.lower() in _ACRONYMS or (len(word) > 1 and word.isupper()):
            out.append(word.upper())
        elif i == 0:
            out.append(word[:1].upper() + word[1:].lower())
        else:
            out.append(word.lower())
    return " ".join(out)
