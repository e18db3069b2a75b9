"""``call TOOL key=value ...``: tool arguments from the command line, checked against the tool.

Each ``key=value`` becomes one argument. The value is JSON when it parses as JSON (``n=3``,
``ok=true``, ``tags=["a","b"]``), else the text as typed (``name=Ada``); where the tool's
``inputSchema`` says the property is a string and nothing else, the text is kept as typed even
when it would parse (``zip=01234``, ``code=007``). The arguments are then checked against the
``inputSchema`` (JSON Schema 2020-12) before the call is sent, and every problem is reported by
argument name and the expected JSON type, never by the value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from erlmcp_py.core.i18n import Texts
from erlmcp_py.core.wording import json_type

__all__ = ["ArgumentError", "check_arguments", "parse_arguments", "parse_value"]


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


def _name(error: Any) -> str:
    path = [str(p) for p in error.absolute_path]
    return ".".join(path) if path else "(arguments)"


def check_arguments(
    tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any] | None, t: Texts
) -> None:
    """Check ``arguments`` against the tool's ``inputSchema``.

    Raises:
        ArgumentError: the heading and one line per problem, in argument order.
    """
    if not isinstance(schema, Mapping):
        return
    try:
        validator = Draft202012Validator(dict(schema))
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
    except Exception:  # an unusable schema: the server judges the call itself
        return
    if not errors:
        return
    lines = [t("arguments_invalid", tool=tool)]
    for error in errors:
        if error.validator == "required":
            present = set(arguments)
            for missing in error.validator_value:
                if missing not in present:
                    lines.append("  " + t("arg_missing", name=missing))
        elif error.validator == "additionalProperties":
            allowed = set((schema.get("properties") or {}).keys())
            for extra in sorted(set(arguments) - allowed):
                lines.append("  " + t("arg_unexpected", name=extra))
        elif error.validator == "type":
            expected = error.validator_value
            if isinstance(expected, list):
                expected = " | ".join(expected)
            actual = json_type(error.instance)
            lines.append("  " + t("arg_type", name=_name(error), expected=expected, actual=actual))
        else:
            detail = f"{error.validator} {json.dumps(error.validator_value, ensure_ascii=False)}"
            lines.append("  " + t("arg_other", name=_name(error), detail=detail))
    raise ArgumentError(lines)
