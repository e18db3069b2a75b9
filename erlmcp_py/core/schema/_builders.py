"""Builders of checked requestedSchema properties and objects (:func:`string_field` ...
:func:`object_schema`).

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from erlmcp_py.core.schema._frozen import thaw
from erlmcp_py.core.schema._walk import _check_property, check_requested_schema
from erlmcp_py.core.versions import (
    LATEST_VERSION,
)

__all__ = [
    "boolean_field",
    "enum_field",
    "integer_field",
    "multi_select_field",
    "number_field",
    "object_schema",
    "string_field",
]


def _base(type_: str, title: str | None, description: str | None) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": type_}
    if title is not None:
        prop["title"] = title
    if description is not None:
        prop["description"] = description
    return prop


def _finish(prop: dict[str, Any]) -> dict[str, Any]:
    _check_property(prop, "", LATEST_VERSION)
    return prop


def string_field(
    *,
    title: str | None = None,
    description: str | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    format: str | None = None,
    default: str | None = None,
) -> dict[str, Any]:
    """Build a string property.

    Args:
        title: Label shown to the user.
        description: Help text.
        min_length: ``minLength`` (code points).
        max_length: ``maxLength`` (code points).
        format: One of ``email``, ``uri``, ``date``, ``date-time``.
        default: Pre-filled value (2025-11-25+; dropped for 2025-06-18 clients).

    Returns:
        The checked property schema.

    Raises:
        SchemaNotAllowed: a value is out of the MCP subset (e.g. an unknown format).
    """
    prop = _base("string", title, description)
    if min_length is not None:
        prop["minLength"] = min_length
    if max_length is not None:
        prop["maxLength"] = max_length
    if format is not None:
        prop["format"] = format
    if default is not None:
        prop["default"] = default
    return _finish(prop)


def _numeric(
    type_: str,
    title: str | None,
    description: str | None,
    minimum: float | None,
    maximum: float | None,
    default: float | None,
) -> dict[str, Any]:
    prop = _base(type_, title, description)
    if minimum is not None:
        prop["minimum"] = minimum
    if maximum is not None:
        prop["maximum"] = maximum
    if default is not None:
        prop["default"] = default
    return _finish(prop)


def number_field(
    *,
    title: str | None = None,
    description: str | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    default: float | None = None,
) -> dict[str, Any]:
    """Build a ``number`` property (inclusive bounds); see :func:`string_field`."""
    return _numeric("number", title, description, minimum, maximum, default)


def integer_field(
    *,
    title: str | None = None,
    description: str | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    default: int | None = None,
) -> dict[str, Any]:
    """Build an ``integer`` property (inclusive bounds); see :func:`string_field`."""
    return _numeric("integer", title, description, minimum, maximum, default)


def boolean_field(
    *, title: str | None = None, description: str | None = None, default: bool | None = None
) -> dict[str, Any]:
    """Build a ``boolean`` property (its ``default`` is allowed in every version)."""
    prop = _base("boolean", title, description)
    if default is not None:
        prop["default"] = default
    return _finish(prop)


def _options(values: Sequence[str] | Mapping[str, str]) -> tuple[list[str], list[str] | None]:
    if isinstance(values, Mapping):
        return list(values.keys()), list(values.values())
    if isinstance(values, str):
        raise TypeError("options must be a sequence of strings or a value -> title mapping")
    return list(values), None


def enum_field(
    values: Sequence[str] | Mapping[str, str],
    *,
    title: str | None = None,
    description: str | None = None,
    default: str | None = None,
    legacy_names: bool = False,
) -> dict[str, Any]:
    """Build a single-select property.

    Args:
        values: A sequence of option values (untitled: ``enum``) or a ``value -> title``
            mapping (titled: ``oneOf`` of ``{const, title}``).
        title: Label of the field.
        description: Help text.
        default: Pre-selected value (2025-11-25+).
        legacy_names: With a mapping, emit the deprecated ``enum`` + ``enumNames`` shape
            instead of ``oneOf`` (what :func:`downlevel` does for 2025-06-18 anyway).

    Returns:
        The checked property schema.

    Raises:
        SchemaNotAllowed: empty or duplicate options, or a default that is not an option.
    """
    opts, titles = _options(values)
    prop = _base("string", title, description)
    if titles is None:
        prop["enum"] = opts
    elif legacy_names:
        prop["enum"] = opts
        prop["enumNames"] = titles
    else:
        prop["oneOf"] = [{"const": v, "title": t} for v, t in zip(opts, titles, strict=True)]
    if default is not None:
        prop["default"] = default
    return _finish(prop)


def multi_select_field(
    values: Sequence[str] | Mapping[str, str],
    *,
    title: str | None = None,
    description: str | None = None,
    min_items: int | None = None,
    max_items: int | None = None,
    default: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Build a multi-select property (2025-11-25+): an array of option values.

    Args:
        values: Option values (untitled: ``items.enum``) or a ``value -> title`` mapping
            (titled: ``items.anyOf`` of ``{const, title}``).
        title: Label of the field.
        description: Help text.
        min_items: ``minItems``.
        max_items: ``maxItems``.
        default: Pre-selected values.

    Returns:
        The checked property schema.

    Raises:
        SchemaNotAllowed: empty or duplicate options, bad bounds or default.
    """
    opts, titles = _options(values)
    prop = _base("array", title, description)
    if min_items is not None:
        prop["minItems"] = min_items
    if max_items is not None:
        prop["maxItems"] = max_items
    if titles is None:
        prop["items"] = {"type": "string", "enum": opts}
    else:
        prop["items"] = {
            "anyOf": [{"const": v, "title": t} for v, t in zip(opts, titles, strict=True)]
        }
    if default is not None:
        prop["default"] = list(default)
    return _finish(prop)


def object_schema(
    properties: Mapping[str, Mapping[str, Any]], required: Iterable[str] = ()
) -> dict[str, Any]:
    """Assemble a requestedSchema from property schemas.

    Args:
        properties: Field name -> property schema, in display order.
        required: Names of the fields the user must fill in.

    Returns:
        ``{"type": "object", "properties": ..., "required": [...]}`` (``required`` is always
        present, possibly empty), checked at :data:`LATEST_VERSION`.

    Raises:
        SchemaNotAllowed: the result is not an allowed requestedSchema.
    """
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: thaw(prop) for name, prop in properties.items()},
        "required": list(required),
    }
    check_requested_schema(schema, LATEST_VERSION)
    return schema
