"""The kinds of a requestedSchema property (:class:`FieldKind`) and how a property is classified.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

from erlmcp_py.core.errors import SchemaNotAllowed

__all__ = [
    "FieldKind",
    "enum_options",
    "field_kind",
]


class FieldKind(enum.StrEnum):
    """The shape of one property of a (checked) requestedSchema."""

    STRING = "string"
    NUMBER = "number"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    SINGLE_SELECT = "single_select"  # {"type":"string","enum":[...]}
    LEGACY_SINGLE_SELECT = "legacy_single_select"  # enum + enumNames
    TITLED_SINGLE_SELECT = "titled_single_select"  # oneOf [{const,title}]
    MULTI_SELECT = "multi_select"  # items {type:string, enum}
    TITLED_MULTI_SELECT = "titled_multi_select"  # items {anyOf [{const,title}]}


_SELECTS: Final = frozenset(
    {
        FieldKind.SINGLE_SELECT,
        FieldKind.LEGACY_SINGLE_SELECT,
        FieldKind.TITLED_SINGLE_SELECT,
        FieldKind.MULTI_SELECT,
        FieldKind.TITLED_MULTI_SELECT,
    }
)
_MULTI: Final = frozenset({FieldKind.MULTI_SELECT, FieldKind.TITLED_MULTI_SELECT})


def field_kind(prop: Mapping[str, Any]) -> FieldKind:
    """Classify a property schema that :func:`check_requested_schema` accepted.

    Args:
        prop: One value of ``requestedSchema["properties"]``.

    Returns:
        Its :class:`FieldKind`.

    Raises:
        SchemaNotAllowed: ``prop`` has no recognisable kind (path ``""``).
    """
    return _classify(prop, "")


def enum_options(prop: Mapping[str, Any]) -> tuple[tuple[str, str | None], ...]:
    """The ``(value, title)`` options of a select property (``title`` is ``None`` when untitled).

    Args:
        prop: A checked single- or multi-select property schema.

    Returns:
        The options in schema order.

    Raises:
        ValueError: ``prop`` is not a select.
    """
    kind = field_kind(prop)
    if kind is FieldKind.SINGLE_SELECT:
        return tuple((v, None) for v in prop["enum"])
    if kind is FieldKind.LEGACY_SINGLE_SELECT:
        names = prop.get("enumNames")
        if names is None:
            return tuple((v, None) for v in prop["enum"])
        return tuple(zip(prop["enum"], names, strict=True))
    if kind is FieldKind.TITLED_SINGLE_SELECT:
        return tuple((o["const"], o["title"]) for o in prop["oneOf"])
    if kind is FieldKind.MULTI_SELECT:
        return tuple((v, None) for v in prop["items"]["enum"])
    if kind is FieldKind.TITLED_MULTI_SELECT:
        return tuple((o["const"], o["title"]) for o in prop["items"]["anyOf"])
    raise ValueError(f"not a select property: {kind}")


def _classify(prop: Mapping[str, Any], path: str) -> FieldKind:
    if not isinstance(prop, Mapping):
        raise SchemaNotAllowed(path, "type", "a property schema must be a JSON object")
    if "type" not in prop:
        for bad in ("$ref", "anyOf", "allOf", "oneOf", "not", "const"):
            if bad in prop:
                raise SchemaNotAllowed(path, bad, "every property needs a primitive 'type'")
        raise SchemaNotAllowed(path, "type", "every property needs a primitive 'type'")
    t = prop["type"]
    if t == "string" and type(t) is str:
        if "enum" in prop and "oneOf" in prop:
            raise SchemaNotAllowed(path, "oneOf", "a select has either 'enum' or 'oneOf'")
        if "enum" in prop:
            return (
                FieldKind.LEGACY_SINGLE_SELECT if "enumNames" in prop else FieldKind.SINGLE_SELECT
            )
        if "oneOf" in prop:
            return FieldKind.TITLED_SINGLE_SELECT
        return FieldKind.STRING
    if t == "number" and type(t) is str:
        return FieldKind.NUMBER
    if t == "integer" and type(t) is str:
        return FieldKind.INTEGER
    if t == "boolean" and type(t) is str:
        return FieldKind.BOOLEAN
    if t == "array" and type(t) is str:
        items = prop.get("items")
        if isinstance(items, Mapping) and "anyOf" in items and "enum" not in items:
            return FieldKind.TITLED_MULTI_SELECT
        return FieldKind.MULTI_SELECT
    raise SchemaNotAllowed(
        path,
        "type",
        "allowed types are string, number, integer, boolean and array (multi-select); "
        "objects and nesting are not",
    )
