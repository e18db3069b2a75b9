"""The MCP ``requestedSchema`` subset, per protocol version: checks, builders, down-levelling.

Theory of operation
-------------------
A form-mode ``elicitation/create`` carries a ``requestedSchema``: a *flat* JSON object schema
whose properties are primitives (``PrimitiveSchemaDefinition`` in the spec's ``schema.ts``).
What is allowed depends on the negotiated protocol version:

=====================  ===========================================  ==========================
property kind          keywords (besides ``type``)                  versions
=====================  ===========================================  ==========================
string                 title description minLength maxLength        all
                       format(email|uri|date|date-time) [default]
number / integer       title description minimum maximum [default]  all
boolean                title description default                    all
untitled single-select title description enum [default]             all
legacy titled select   title description enum enumNames [default]   all
titled single-select   title description oneOf[{const,title}]       2025-11-25+
                       default
untitled multi-select  title description minItems maxItems          2025-11-25+
                       items{type:string,enum} default
titled multi-select    title description minItems maxItems          2025-11-25+
                       items{anyOf[{const,title}]} default
=====================  ===========================================  ==========================

``[default]``: only from 2025-11-25 on (SEP-1034); 2025-06-18 allows ``default`` on booleans
only. The top level is ``{"type": "object", "properties": {...}, "required": [...]}`` plus an
optional ``$schema`` string from 2025-11-25 on. 2026-07-28 has the 2025-11-25 subset.

:func:`check_requested_schema` is a whitelist walk: anything not in the table -- an unknown
keyword, ``$ref``, ``pattern``, nesting, a keyword value of the wrong JSON type, a ``required``
entry naming no property, a ``default`` that fails its own field, an empty form, a schema
larger than 64 KiB -- raises :class:`~erlmcp_py.core.errors.SchemaNotAllowed` with a JSON
pointer to the schema object that holds the offending keyword.

:func:`downlevel` turns a schema written in the newest dialect into what a given version's
client understands (2025-06-18: defaults stay only on booleans, titled single-selects become
``enum`` + ``enumNames``; multi-selects cannot be expressed and are refused).

:class:`RequestedSchema` is a checked schema as a value: its constructor *is* the check, so
a ``RequestedSchema`` holds a schema of its version's subset, frozen, with its encoded size
(measured by the check). Every way of asking builds one once (a type's form, a form
definition, a field helper) and the runtime takes it as it is; a raw schema dict from a
caller becomes one where it enters the runtime (:func:`checked_schema`), checked then.
:meth:`RequestedSchema.for_version` is the down-levelled schema for an older client.

The builders (:func:`string_field` ... :func:`object_schema`) return plain, checked ``dict``
objects. :func:`freeze` turns a schema into an immutable :class:`FrozenDict` that remembers its
canonical digest, which lets the validator cache find it in well under a microsecond.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import enum
import hashlib
import ipaddress
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from typing import Any, Final, NoReturn

from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]
from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.versions import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    V_2025_06_18,
    V_2025_11_25,
    V_2026_07_28,
)
from erlmcp_py.core.wording import json_pointer

__all__ = [
    "FORMATS",
    "MAX_SCHEMA_BYTES",
    "FieldKind",
    "FrozenDict",
    "FrozenList",
    "RequestedSchema",
    "boolean_field",
    "canonical_json",
    "check_format",
    "check_requested_schema",
    "checked_schema",
    "downlevel",
    "enum_field",
    "enum_options",
    "field_kind",
    "freeze",
    "integer_field",
    "multi_select_field",
    "number_field",
    "object_schema",
    "schema_digest",
    "string_field",
    "thaw",
]

#: Size policy for a requestedSchema (a policy default), measured on its compact UTF-8 JSON.
MAX_SCHEMA_BYTES: Final = 64 * 1024


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------

_U = "\u0080-\U0010ffff"  # non-ASCII: RFC 6531 (SMTPUTF8) local parts and IDN hosts
_ATEXT = rf"A-Za-z0-9!#$%&'*+/=?^_`{{|}}~{_U}-"
_DOT_ATOM = rf"[{_ATEXT}]+(?:\.[{_ATEXT}]+)*"
_QUOTED = rf'"(?:[\x20\x21\x23-\x5b\x5d-\x7e{_U}]|\\[\x20-\x7e])*"'
_LABEL = rf"[A-Za-z0-9{_U}](?:[A-Za-z0-9{_U}-]*[A-Za-z0-9{_U}])?"
_EMAIL_RE: Final = re.compile(
    rf"(?P<local>{_DOT_ATOM}|{_QUOTED})@"
    rf"(?:(?P<domain>{_LABEL}(?:\.{_LABEL})*)|\[(?P<literal>[^\[\]\\\s]+)\])"
)
_DATE_RE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _is_email(value: str) -> bool:
    m = _EMAIL_RE.fullmatch(value)
    if m is None or len(value) > 254 or len(m.group("local")) > 64:
        return False
    literal = m.group("literal")
    if literal is None:
        return len(m.group("domain")) <= 253
    try:
        if literal[:5].lower() == "ipv6:":
            ipaddress.IPv6Address(literal[5:])
        else:
            ipaddress.IPv4Address(literal)
    except ValueError:
        return False
    return True


def _is_uri(value: str) -> bool:
    # rfc3986_validator anchors with ``$``, which also matches before a trailing newline.
    return "\n" not in value and bool(validate_rfc3986(value, rule="URI"))


def _is_date(value: str) -> bool:
    if _DATE_RE.fullmatch(value) is None:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_date_time(value: str) -> bool:
    # RFC 3339 allows lower-case "t"/"z"; the validator's ``$`` anchor tolerates a final "\n".
    return "\n" not in value and bool(validate_rfc3339(value.upper()))


#: The only ``format`` values MCP allows, each with the predicate that enforces it.
FORMATS: Final[Mapping[str, Callable[[str], bool]]] = {
    "email": _is_email,
    "uri": _is_uri,
    "date": _is_date,
    "date-time": _is_date_time,
}


def check_format(fmt: str, value: str) -> bool:
    """Tell whether ``value`` is a valid ``fmt`` string.

    Args:
        fmt: One of :data:`FORMATS` (``email``, ``uri``, ``date``, ``date-time``).
        value: The string to check.

    Returns:
        ``True`` when ``value`` conforms. ``email`` is an RFC 5321 mailbox (dot-atom or quoted
        local part; host name or bracketed IP literal); ``uri`` an absolute RFC 3986 URI;
        ``date`` an RFC 3339 full-date; ``date-time`` an RFC 3339 date-time with offset.

    Raises:
        KeyError: ``fmt`` is not an allowed format.
    """
    return FORMATS[fmt](value)


# --------------------------------------------------------------------------------------------
# Frozen schemas and their canonical digest
# --------------------------------------------------------------------------------------------


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable; thaw() it to get a mutable copy")


class FrozenDict(dict[str, Any]):
    """An immutable ``dict`` (deeply: nested dicts and lists are frozen too).

    It is still a ``dict``, so it encodes to JSON and compares equal to plain dicts. It
    remembers its canonical digest, so validators keyed by digest are found without
    re-encoding the schema. Build one with :func:`freeze`.
    """

    __slots__ = ("_digest",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._digest: str | None = None

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    @property
    def digest(self) -> str:
        """The hex SHA-256 of :func:`canonical_json` of this schema (computed once)."""
        if self._digest is None:
            self._digest = _digest_of(self)
        return self._digest

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (freeze, (thaw(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class FrozenList(list[Any]):
    """An immutable ``list``; see :class:`FrozenDict`."""

    __slots__ = ()

    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    clear = _immutable
    extend = _immutable
    insert = _immutable
    pop = _immutable
    remove = _immutable
    reverse = _immutable
    sort = _immutable

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (freeze, (thaw(self),))

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"


def freeze(value: Any) -> Any:
    """Return a deeply immutable copy of a JSON value (dicts -> :class:`FrozenDict`, lists and
    tuples -> :class:`FrozenList`); scalars are returned as they are. Frozen input is returned
    unchanged."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, Mapping):
        out = FrozenDict()
        for k, v in value.items():
            dict.__setitem__(out, k, freeze(v))
        return out
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Return a deep, mutable copy of a JSON value (the inverse of :func:`freeze`)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Encode a JSON value canonically: sorted keys, no whitespace, UTF-8 text, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _digest_of(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def schema_digest(schema: Mapping[str, Any]) -> str:
    """The hex SHA-256 of the canonical JSON of ``schema`` (cached on a :class:`FrozenDict`)."""
    if isinstance(schema, FrozenDict):
        return schema.digest
    return _digest_of(schema)


# --------------------------------------------------------------------------------------------
# Field kinds
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# The whitelist walk
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Checked schemas and down-levelling
# --------------------------------------------------------------------------------------------

#: The subsets, as ranks: a schema of a version's subset is in every subset of equal or higher
#: rank (2025-11-25 and 2026-07-28 share one).
_SUBSET_RANK: Final[Mapping[str, int]] = {V_2025_06_18: 0, V_2025_11_25: 1, V_2026_07_28: 1}


class RequestedSchema(FrozenDict):
    """A ``requestedSchema`` checked for one protocol version's subset (frozen).

    The constructor is the check (:func:`check_requested_schema`): a ``RequestedSchema`` exists
    only for a schema the check accepted, so whoever holds one sends it as it is. It is a
    :class:`FrozenDict`, so it encodes to JSON, compares equal to plain dicts and carries its
    canonical digest.

    Attributes:
        version: The protocol version it was checked for.
        size: Bytes of its compact UTF-8 JSON encoding (measured by the check).
    """

    __slots__ = ("size", "version")

    def __init__(self, schema: Mapping[str, Any], version: str = LATEST_VERSION) -> None:
        """Check ``schema`` for ``version`` and freeze it.

        Raises:
            SchemaNotAllowed: as :func:`check_requested_schema`.
            ValueError: ``version`` is not a version with form elicitation.
        """
        size = _check(schema, version)
        super().__init__()
        for key, value in schema.items():
            dict.__setitem__(self, key, freeze(value))
        self.size = size
        self.version = version

    def allowed_in(self, version: str) -> bool:
        """Whether a ``version`` client must understand this schema as it is (its subset holds
        this schema's version's subset).

        Raises:
            ValueError: ``version`` is not a version with form elicitation.
        """
        rank = _SUBSET_RANK.get(version)
        if rank is None:
            _check_version(version)
        return _SUBSET_RANK[self.version] <= _SUBSET_RANK[version]

    def for_version(self, version: str) -> RequestedSchema:
        """This schema as the ``version`` client must receive it: itself when it is allowed
        there; for 2025-06-18, ``$schema`` dropped, ``default`` kept on booleans only, titled
        single-selects (``oneOf``) as ``enum`` + ``enumNames``.

        Raises:
            SchemaNotAllowed: a multi-select has no 2025-06-18 form (keyword ``"type"`` at the
                property, ``inexpressible_in`` the version).
            ValueError: unknown ``version``.
        """
        if self.allowed_in(version):
            return self
        out: dict[str, Any] = thaw(self)
        out.pop("$schema", None)
        props: dict[str, Any] = out["properties"]
        for name, prop in props.items():
            path = _pointer("/properties", name)
            kind = _classify(prop, path)
            if kind in _MULTI:
                raise SchemaNotAllowed(
                    path, "type", "2025-06-18 has no multi-select", inexpressible_in=version
                )
            if kind is not FieldKind.BOOLEAN:
                prop.pop("default", None)
            if kind is FieldKind.TITLED_SINGLE_SELECT:
                options = prop.pop("oneOf")
                prop["enum"] = [o["const"] for o in options]
                prop["enumNames"] = [o["title"] for o in options]
        return RequestedSchema(out, version)

    def __reduce__(self) -> tuple[Any, ...]:
        return (RequestedSchema, (thaw(self), self.version))

    def __repr__(self) -> str:
        return f"RequestedSchema({dict.__repr__(self)}, {self.version!r})"


def checked_schema(schema: Mapping[str, Any], version: str) -> RequestedSchema:
    """``schema`` as a :class:`RequestedSchema` a ``version`` client must understand.

    A ``RequestedSchema`` allowed in ``version`` is returned as it is; any other schema (a raw
    dict from a caller, or one checked for a newer subset) is checked for ``version`` now.

    Raises:
        SchemaNotAllowed: as :func:`check_requested_schema`.
        ValueError: ``version`` is not a version with form elicitation.
    """
    if isinstance(schema, RequestedSchema) and schema.allowed_in(version):
        return schema
    return RequestedSchema(schema, version)


def downlevel(schema: Mapping[str, Any], version: str) -> dict[str, Any]:
    """Return ``schema`` (newest dialect) as the ``version`` client must receive it.

    For 2025-11-25 and 2026-07-28 this is a checked copy. For 2025-06-18: ``$schema`` is
    dropped, ``default`` is kept on booleans only, titled single-selects (``oneOf``) become
    ``enum`` + ``enumNames``. Multi-selects have no 2025-06-18 form and are refused.
    (:meth:`RequestedSchema.for_version` does the same without the mutable copy.)

    Args:
        schema: A requestedSchema accepted by :func:`check_requested_schema` at
            :data:`LATEST_VERSION`.
        version: The client's negotiated protocol version.

    Returns:
        A new, mutable schema accepted by ``check_requested_schema(result, version)``.

    Raises:
        SchemaNotAllowed: ``schema`` is not allowed, or cannot be expressed for ``version``
            (keyword ``"type"`` at a multi-select property).
        ValueError: unknown ``version``.
    """
    _check_version(version)
    out: dict[str, Any] = thaw(checked_schema(schema, LATEST_VERSION).for_version(version))
    return out


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


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
