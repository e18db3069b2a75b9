"""``call TOOL key=value ...`` and ``prompt NAME key=value ...``: arguments from the command
line, checked against what the tool or prompt declares before anything is sent.

Each ``key=value`` becomes one argument. The value is JSON when it parses as JSON (``n=3``,
``ok=true``, ``tags=["a","b"]``), else the text as typed (``name=Ada``); where the tool's
``inputSchema`` says the property is a string and nothing else, the text is kept as typed even
when it would parse (``zip=01234``, ``code=007``). A prompt's arguments are strings: always the
text as typed (:func:`prompt_schema` says so).

The arguments are then checked (:func:`check_arguments`):

* a key the schema does not declare is an error, with the closest declared name not already
  given offered (``employe: no such argument; did you mean employee?``, by :mod:`difflib`):
  servers commonly drop what they do not know, so a misspelt optional argument would otherwise
  be lost without a word. A schema that takes other keys (``additionalProperties`` other than
  ``false``, ``patternProperties``, or no ``properties`` at all) accepts them;
* then the schema itself (JSON Schema 2020-12): each missing required argument is named, and
  every other problem is reported by argument name and the expected JSON type, never by the
  value.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from erlmcp_py.core.i18n import Texts
from erlmcp_py.core.wording import json_type

__all__ = [
    "ArgumentError",
    "check_arguments",
    "check_prompt_arguments",
    "parse_arguments",
    "parse_value",
    "prompt_schema",
]


class ArgumentError(ValueError):
    """The arguments cannot be sent; ``lines`` are the messages to show."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


def _string_only(schema: Mapping[str, Any] | None, key: str) -> bool:
    if not isinstance(schema, Mapping):
        return False
    props = schema.get("properties")
    prop = props.get(key) if isinstance(props, Mapping) else None
    return isinstance(prop, Mapping) and prop.get("type") == "string"


def parse_value(text: str, *, string_only: bool = False) -> Any:
    """The JSON value of ``text`` when it parses, else ``text`` itself.

    Args:
        text: What follows ``=``.
        string_only: The property is a string: keep ``text`` as typed.
    """
    if string_only:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_arguments(
    tokens: Sequence[str], schema: Mapping[str, Any] | None, t: Texts
) -> dict[str, Any]:
    """``key=value`` tokens as tool arguments (see the module docstring).

    Raises:
        ArgumentError: a token has no ``=`` or an empty key.
    """
    out: dict[str, Any] = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ArgumentError([t("bad_argument", text=token)])
        out[key] = parse_value(value, string_only=_string_only(schema, key))
    return out


def prompt_schema(declared: object) -> dict[str, Any]:
    """A prompt's declared ``arguments`` (``[{name, description, required}]``) as the JSON
    Schema of its ``arguments`` object: every one a string, the required ones required, and
    no other key."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for argument in declared if isinstance(declared, list) else ():
        name = argument.get("name") if isinstance(argument, Mapping) else None
        if isinstance(name, str):
            props[name] = {"type": "string"}
            if argument.get("required"):
                required.append(name)
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


def _declared(schema: Mapping[str, Any]) -> Sequence[str] | None:
    """The only keys ``schema`` takes; ``None`` when it takes others too (see the module
    docstring)."""
    props = schema.get("properties")
    names = [str(name) for name in props] if isinstance(props, Mapping) else []
    if "additionalProperties" in schema:
        return names if schema["additionalProperties"] is False else None
    if "patternProperties" in schema or not isinstance(props, Mapping):
        return None
    return names


def _unknown(key: str, declared: Sequence[str], t: Texts) -> str:
    close = difflib.get_close_matches(key, declared, n=1)
    if close:
        return "  " + t("arg_unknown_close", name=key, suggestion=close[0])
    return "  " + t("arg_unknown", name=key)


def _name(error: Any) -> str:
    path = [str(p) for p in error.absolute_path]
    return ".".join(path) if path else "(arguments)"


def check_arguments(
    tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any] | None, t: Texts
) -> None:
    """Check ``arguments`` against the tool's ``inputSchema`` (see the module docstring).

    Raises:
        ArgumentError: the heading and one line per problem: the unknown keys in the order
            typed, then the rest in argument order.
    """
    _check(t("arguments_invalid", tool=tool), arguments, schema, t)


def check_prompt_arguments(
    prompt: str, arguments: Mapping[str, Any], declared: object, t: Texts
) -> None:
    """Check ``arguments`` against the prompt's declared ``arguments`` (see
    :func:`check_arguments`).

    Raises:
        ArgumentError: the heading and one line per problem.
    """
    _check(t("prompt_arguments_invalid", prompt=prompt), arguments, prompt_schema(declared), t)


def _check(
    heading: str, arguments: Mapping[str, Any], schema: Mapping[str, Any] | None, t: Texts
) -> None:
    if not isinstance(schema, Mapping):
        return
    lines: list[str] = []
    declared = _declared(schema)
    if declared is not None:
        free = [name for name in declared if name not in arguments]  # a typo is of one of these
        lines.extend(_unknown(key, free, t) for key in arguments if key not in declared)
    try:
        validator = Draft202012Validator(dict(schema))
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
    except Exception:  # an unusable schema: the server judges the call itself
        errors = []
    for error in errors:
        if error.validator == "required":
            present = set(arguments)
            for missing in error.validator_value:
                if missing not in present:
                    lines.append("  " + t("arg_missing", name=missing))
        elif error.validator == "additionalProperties":
            continue  # the unknown keys, named above
        elif error.validator == "type":
            expected = error.validator_value
            if isinstance(expected, list):
                expected = " | ".join(expected)
            actual = json_type(error.instance)
            lines.append("  " + t("arg_type", name=_name(error), expected=expected, actual=actual))
        else:
            detail = f"{error.validator} {json.dumps(error.validator_value, ensure_ascii=False)}"
            lines.append("  " + t("arg_other", name=_name(error), detail=detail))
    if lines:
        raise ArgumentError([heading, *lines])
