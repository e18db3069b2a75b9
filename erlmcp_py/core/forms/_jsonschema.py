"""The server-side JSON Schema 2020-12 of a form: every rule the schema language can express.

Separate from the wire schema (:mod:`~erlmcp_py.core.forms._wire`): this one carries
``pattern``, exclusive bounds, ``multipleOf``, ``uniqueItems``, ``additionalProperties`` and the
``if``/``then`` clauses of conditional requirements, plus the format checker and the
validator class it runs with (whose ``pattern`` has ECMA-262 semantics, as JSON Schema
requires: :mod:`~erlmcp_py.core.forms._pattern`).
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Final

from jsonschema import (  # type: ignore[import-untyped]
    Draft202012Validator,
    ValidationError,
    validators,
)

from erlmcp_py.core.forms._conditions import _Plan
from erlmcp_py.core.forms._fields import (
    AnyField,
    BooleanField,
    DateField,
    MultiSelectField,
    NumberField,
    SelectField,
    TextField,
    UrlField,
    _option_values,
    _url_max_length,
)
from erlmcp_py.core.forms._pattern import ecma_pattern
from erlmcp_py.core.schema import FORMATS
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.core.validation import format_checker

_DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"


def _put(schema: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        schema[key] = value


def _validation_property(f: AnyField, policy: UrlPolicy) -> dict[str, Any]:
    s: dict[str, Any] = {"title": f.label}
    if isinstance(f, TextField):
        s["type"] = "string"
        _put(s, "minLength", f.validation.min_length)
        _put(s, "maxLength", f.validation.max_length)
        _put(s, "pattern", f.validation.pattern)
        _put(s, "format", f.validation.format)
    elif isinstance(f, NumberField):
        v = f.validation
        s["type"] = "integer" if v.is_integer else "number"
        _put(s, "minimum", v.minimum)
        _put(s, "maximum", v.maximum)
        _put(s, "exclusiveMinimum", v.exclusive_minimum)
        _put(s, "exclusiveMaximum", v.exclusive_maximum)
        _put(s, "multipleOf", v.multiple_of)
    elif isinstance(f, BooleanField):
        s["type"] = "boolean"
    elif isinstance(f, DateField):
        s.update(type="string", format=f.validation.format)
        # Range: checked natively (JSON Schema cannot compare dates); kept as annotations.
        _put(s, "formatMinimum", f.validation.minimum)
        _put(s, "formatMaximum", f.validation.maximum)
    elif isinstance(f, SelectField):
        s.update(type="string", enum=_option_values(f.options))
    elif isinstance(f, MultiSelectField):
        s.update(
            type="array",
            items={"type": "string", "enum": _option_values(f.options)},
            uniqueItems=True,
        )
        _put(s, "minItems", f.validation.min_items)
        _put(s, "maxItems", f.validation.max_items)
    elif isinstance(f, UrlField):
        s.update(type="string", format="uri", maxLength=_url_max_length(f, policy))
    else:
        fv = f.validation
        size: dict[str, Any] = {"type": "integer", "minimum": 0}
        _put(size, "maximum", fv.max_size)
        content_type: dict[str, Any] = {"type": "string", "minLength": 1}
        if fv.allowed_mime_types is not None:
            content_type["enum"] = list(fv.allowed_mime_types)
        s.update(
            type="object",
            properties={
                "filename": {"type": "string", "minLength": 1, "maxLength": 255},
                "content_type": content_type,
                "size": size,
            },
            required=["filename", "content_type", "size"],
        )
    if f.default is not None:
        s["default"] = list(f.default) if isinstance(f.default, tuple) else f.default
    return s


def _all_of(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    return schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _required(plan: _Plan, allow_partial: bool) -> tuple[bool, list[dict[str, Any]]]:
    """(unconditionally required?, list of ``if`` schemas each making it required)."""
    if allow_partial or plan.field.rendering.hidden:
        return False, []
    shows = [s.json_schema() for s in plan.shows]
    clauses: list[dict[str, Any]] = []
    if plan.field.required:
        if not shows:
            return True, []
        clauses.append(_all_of(shows))
    for cond in plan.requires_when:
        clauses.append(_all_of([*shows, cond.json_schema()]))
    return False, clauses


def _check_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


_HOSTNAME_RE: Final = re.compile(
    r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z"
)


def _check_ip(version: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False

    return check


_EXTRA_FORMATS: Final = {
    "uuid": _check_uuid,
    "hostname": lambda v: _HOSTNAME_RE.match(v) is not None,
    "ipv4": _check_ip(4),
    "ipv6": _check_ip(6),
}
_FORMAT_CHECKER: Final = format_checker({**FORMATS, **_EXTRA_FORMATS})


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """JSON Schema ``pattern`` with ECMA-262 semantics (jsonschema's uses Python's ``re``)."""
    if validator.is_type(instance, "string") and ecma_pattern(pattern).search(instance) is None:
        yield ValidationError("does not match the pattern")


_Validator: Final = validators.extend(Draft202012Validator, {"pattern": _pattern})
