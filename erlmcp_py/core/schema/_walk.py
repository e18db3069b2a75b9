"""The whitelist walk: :func:`check_requested_schema` and the keywords each kind and version
allows.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.schema._formats import FORMATS
from erlmcp_py.core.schema._kinds import _MULTI, _SELECTS, FieldKind, _classify, enum_options
from erlmcp_py.core.versions import (
    SUPPORTED_VERSIONS,
    V_2025_06_18,
)
from erlmcp_py.core.wording import json_pointer

__all__ = [
    "MAX_SCHEMA_BYTES",
    "check_requested_schema",
]


#: Size policy for a requestedSchema (a policy default), measured on its compact UTF-8 JSON.
MAX_SCHEMA_BYTES: Final = 64 * 1024

_COMMON: Final = frozenset({"type", "title", "description"})
# Keywords per kind, before SEP-1034 defaults are added.
_BASE_KEYWORDS: Final[Mapping[FieldKind, frozenset[str]]] = {
    FieldKind.STRING: _COMMON | {"minLength", "maxLength", "format"},
    FieldKind.NUMBER: _COMMON | {"minimum", "maximum"},
    FieldKind.INTEGER: _COMMON | {"minimum", "maximum"},
    FieldKind.BOOLEAN: _COMMON | {"default"},
    FieldKind.SINGLE_SELECT: _COMMON | {"enum"},
    FieldKind.LEGACY_SINGLE_SELECT: _COMMON | {"enum", "enumNames"},
    FieldKind.TITLED_SINGLE_SELECT: _COMMON | {"oneOf"},
    FieldKind.MULTI_SELECT: _COMMON | {"items", "minItems", "maxItems"},
    FieldKind.TITLED_MULTI_SELECT: _COMMON | {"items", "minItems", "maxItems"},
}
_NEW_IN_2025_11_25: Final = frozenset({FieldKind.TITLED_SINGLE_SELECT, *_MULTI})


def _pointer(path: str, token: str | int) -> str:
    return path + json_pointer(token)


def _check_version(version: str) -> None:
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"protocol version {version!r} has no form elicitation; "
            f"supported: {', '.join(sorted(SUPPORTED_VERSIONS))}"
        )


def _is_number(v: object) -> bool:
    return type(v) in (int, float) and math.isfinite(v)  # type: ignore[arg-type]


def _is_count(v: object) -> bool:
    return type(v) is int and v >= 0


def _want_str(prop: Mapping[str, Any], key: str, path: str) -> None:
    if key in prop and type(prop[key]) is not str:
        raise SchemaNotAllowed(path, key, "must be a string")


def _check_options(options: object, path: str, keyword: str, titled: bool) -> list[str]:
    """Check an ``enum`` list (untitled) or a ``oneOf``/``anyOf`` list of {const,title}."""
    if not isinstance(options, list) or not options:
        raise SchemaNotAllowed(path, keyword, "must be a non-empty array")
    values: list[str] = []
    for i, opt in enumerate(options):
        if titled:
            opath = _pointer(_pointer(path, keyword), i)
            if not isinstance(opt, Mapping):
                raise SchemaNotAllowed(opath, "const", "each option is {const, title}")
            for k in opt:
                if k not in ("const", "title"):
                    raise SchemaNotAllowed(opath, str(k), "each option is exactly {const, title}")
            for k in ("const", "title"):
                if type(opt.get(k)) is not str:
                    raise SchemaNotAllowed(opath, k, "each option needs string 'const' and 'title'")
            values.append(opt["const"])
        else:
            if type(opt) is not str:
                raise SchemaNotAllowed(path, keyword, "options must be strings")
            values.append(opt)
    if len(set(values)) != len(values):
        raise SchemaNotAllowed(path, keyword, "options must be unique")
    return values


def _check_length_pair(prop: Mapping[str, Any], path: str, lo: str, hi: str) -> None:
    for k in (lo, hi):
        if k in prop and not _is_count(prop[k]):
            raise SchemaNotAllowed(path, k, "must be a non-negative integer")
    if lo in prop and hi in prop and prop[lo] > prop[hi]:
        raise SchemaNotAllowed(path, lo, f"{lo} is greater than {hi}")


def _check_property(prop: Mapping[str, Any], path: str, version: str) -> FieldKind:
    kind = _classify(prop, path)
    allowed = _BASE_KEYWORDS[kind]
    if version != V_2025_06_18:
        allowed = allowed | {"default"}
    elif kind in _NEW_IN_2025_11_25:
        keyword = "oneOf" if kind is FieldKind.TITLED_SINGLE_SELECT else "type"
        raise SchemaNotAllowed(path, keyword, f"{kind.value} needs protocol 2025-11-25 or newer")
    for k in prop:
        if k not in allowed:
            detail = "not allowed in an MCP requestedSchema"
            if k == "default":
                detail = "2025-06-18 allows defaults on booleans only"
            raise SchemaNotAllowed(path, str(k), detail)
    _want_str(prop, "title", path)
    _want_str(prop, "description", path)

    if kind is FieldKind.STRING:
        _check_length_pair(prop, path, "minLength", "maxLength")
        if "format" in prop and (type(prop["format"]) is not str or prop["format"] not in FORMATS):
            raise SchemaNotAllowed(path, "format", "allowed formats: email, uri, date, date-time")
    elif kind in (FieldKind.NUMBER, FieldKind.INTEGER):
        for k in ("minimum", "maximum"):
            if k in prop and not _is_number(prop[k]):
                raise SchemaNotAllowed(path, k, "must be a finite number")
        if "minimum" in prop and "maximum" in prop and prop["minimum"] > prop["maximum"]:
            raise SchemaNotAllowed(path, "minimum", "minimum is greater than maximum")
    elif kind in (FieldKind.SINGLE_SELECT, FieldKind.LEGACY_SINGLE_SELECT):
        values = _check_options(prop["enum"], path, "enum", titled=False)
        if "enumNames" in prop:
            names = prop["enumNames"]
            if (
                not isinstance(names, list)
                or len(names) != len(values)
                or any(type(n) is not str for n in names)
            ):
                raise SchemaNotAllowed(path, "enumNames", "must be strings, one per enum value")
    elif kind is FieldKind.TITLED_SINGLE_SELECT:
        _check_options(prop["oneOf"], path, "oneOf", titled=True)
    elif kind in _MULTI:
        _check_length_pair(prop, path, "minItems", "maxItems")
        ipath = _pointer(path, "items")
        items = prop.get("items")
        if not isinstance(items, Mapping):
            raise SchemaNotAllowed(
                path, "items", "a multi-select needs items {type, enum} or {anyOf}"
            )
        if kind is FieldKind.MULTI_SELECT:
            for k in items:
                if k not in ("type", "enum"):
                    raise SchemaNotAllowed(ipath, str(k), "items of a multi-select: {type, enum}")
            if items.get("type") != "string" or type(items.get("type")) is not str:
                raise SchemaNotAllowed(ipath, "type", "multi-select items must be strings")
            if "enum" not in items:
                raise SchemaNotAllowed(ipath, "enum", "arrays are allowed only as multi-selects")
            values = _check_options(items["enum"], ipath, "enum", titled=False)
        else:
            for k in items:
                if k != "anyOf":
                    raise SchemaNotAllowed(ipath, str(k), "items of a titled multi-select: {anyOf}")
            values = _check_options(items["anyOf"], ipath, "anyOf", titled=True)
        if prop.get("minItems", 0) > len(values):
            raise SchemaNotAllowed(path, "minItems", "minItems exceeds the number of options")
    if "default" in prop:
        _check_default(prop, kind, path)
    return kind


def _check_default(prop: Mapping[str, Any], kind: FieldKind, path: str) -> None:
    d = prop["default"]

    def bad(why: str) -> NoReturn:
        raise SchemaNotAllowed(path, "default", why)

    if kind is FieldKind.BOOLEAN:
        if type(d) is not bool:
            bad("must be true or false")
    elif kind is FieldKind.STRING:
        if type(d) is not str:
            bad("must be a string")
        if len(d) < prop.get("minLength", 0) or len(d) > prop.get("maxLength", len(d)):
            bad("does not satisfy minLength/maxLength")
        if "format" in prop and not FORMATS[prop["format"]](d):
            bad(f"is not a valid {prop['format']}")
    elif kind in (FieldKind.NUMBER, FieldKind.INTEGER):
        if not _is_number(d):
            bad("must be a finite number")
        if kind is FieldKind.INTEGER and not float(d).is_integer():
            bad("must be an integer")
        if d < prop.get("minimum", d) or d > prop.get("maximum", d):
            bad("is outside minimum/maximum")
    elif kind in _SELECTS:
        values = {v for v, _ in enum_options(prop)}
        if kind in _MULTI:
            if not isinstance(d, list) or any(type(x) is not str for x in d):
                bad("must be an array of option values")
            if len(set(d)) != len(d):
                bad("must not repeat an option")
            if len(d) < prop.get("minItems", 0) or len(d) > prop.get("maxItems", len(d)):
                bad("does not satisfy minItems/maxItems")
            if not set(d) <= values:
                bad("must name options of the field")
        elif type(d) is not str or d not in values:
            bad("must be one of the field's options")


def check_requested_schema(schema: Mapping[str, Any], version: str) -> None:
    """Check that ``schema`` is a ``requestedSchema`` the ``version`` client must understand.

    Args:
        schema: The candidate ``requestedSchema`` (a JSON object).
        version: A protocol version in :data:`SUPPORTED_VERSIONS`.

    Raises:
        SchemaNotAllowed: ``path`` points (JSON pointer) at the schema object that holds the
            offending ``keyword``; ``detail`` says why. Raised for anything outside the MCP
            subset of that version (see the module docstring), for empty forms and for schemas
            over :data:`MAX_SCHEMA_BYTES`.
        ValueError: ``version`` is not a version with form elicitation.
    """
    _check(schema, version)


def _check(schema: Mapping[str, Any], version: str) -> int:
    """The whitelist walk of :func:`check_requested_schema`; returns the schema's size in
    bytes (its compact UTF-8 JSON encoding)."""
    _check_version(version)
    if not isinstance(schema, Mapping):
        raise SchemaNotAllowed("", "type", "requestedSchema must be a JSON object")
    top_allowed = ("type", "properties", "required") + (
        ("$schema",) if version != V_2025_06_18 else ()
    )
    for k in schema:
        if k not in top_allowed:
            raise SchemaNotAllowed("", str(k), "not allowed at the top of a requestedSchema")
    if schema.get("type") != "object" or type(schema.get("type")) is not str:
        raise SchemaNotAllowed("", "type", 'requestedSchema must have "type": "object"')
    _want_str(schema, "$schema", "")
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        raise SchemaNotAllowed("", "properties", "must be an object of property schemas")
    if not props:
        raise SchemaNotAllowed("", "properties", "a form needs at least one field")
    for name, prop in props.items():
        if type(name) is not str or not name:
            raise SchemaNotAllowed(
                "/properties", "properties", "property names are non-empty strings"
            )
        _check_property(prop, _pointer("/properties", name), version)
    if "required" in schema:
        req = schema["required"]
        if not isinstance(req, list):
            raise SchemaNotAllowed("", "required", "must be an array of property names")
        seen: set[str] = set()
        for name in req:
            if type(name) is not str or name not in props:
                raise SchemaNotAllowed("", "required", "names a property the schema does not have")
            if name in seen:
                raise SchemaNotAllowed("", "required", "names a property twice")
            seen.add(name)
    try:
        size = len(
            json.dumps(schema, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        )
    except (TypeError, ValueError) as exc:  # pragma: no cover - the walk above catches these
        raise SchemaNotAllowed("", "type", "not JSON-encodable") from exc
    if size > MAX_SCHEMA_BYTES:
        raise SchemaNotAllowed("", "size", f"{size} bytes encoded; the limit is {MAX_SCHEMA_BYTES}")
    return size
