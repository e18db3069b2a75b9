"""requestedSchema subset per protocol version: checks, builders, down-levelling, formats."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.schema import (
    FORMATS,
    MAX_SCHEMA_BYTES,
    FieldKind,
    FrozenDict,
    FrozenList,
    RequestedSchema,
    boolean_field,
    canonical_json,
    check_format,
    check_requested_schema,
    checked_schema,
    downlevel,
    enum_field,
    enum_options,
    field_kind,
    freeze,
    integer_field,
    multi_select_field,
    number_field,
    object_schema,
    schema_digest,
    string_field,
    thaw,
)
from erlmcp_py.core.versions import SESSION_VERSIONS, V_2026_07_28

OLD, MID, NEW = (*SESSION_VERSIONS, V_2026_07_28)
ALL = (OLD, MID, NEW)
NEWER = (MID, NEW)


def form(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def rejected(schema: Any, version: str) -> SchemaNotAllowed:
    with pytest.raises(SchemaNotAllowed) as info:
        check_requested_schema(schema, version)
    return info.value


# --------------------------------------------------------------------------------------------
# Conformance scenarios (the MCP conformance suite's elicitation scenarios)
# --------------------------------------------------------------------------------------------

TOOLS_CALL_ELICITATION = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

SEP1034_DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

SEP1330_ENUMS = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


@pytest.mark.parametrize("version", ALL)
def test_tools_call_elicitation_schema_allowed_everywhere(version: str) -> None:
    check_requested_schema(TOOLS_CALL_ELICITATION, version)


@pytest.mark.parametrize("version", NEWER)
def test_conformance_schemas_allowed_from_2025_11_25(version: str) -> None:
    check_requested_schema(SEP1034_DEFAULTS, version)
    check_requested_schema(SEP1330_ENUMS, version)


def test_sep1034_defaults_not_allowed_on_2025_06_18_but_downlevel_keeps_boolean_default() -> None:
    err = rejected(SEP1034_DEFAULTS, OLD)
    assert (err.path, err.keyword) == ("/properties/name", "default")
    old = downlevel(SEP1034_DEFAULTS, OLD)
    check_requested_schema(old, OLD)
    defaults = {n: p.get("default") for n, p in old["properties"].items()}
    assert defaults == {"name": None, "age": None, "score": None, "status": None, "verified": True}


def test_sep1330_multi_selects_cannot_go_to_2025_06_18() -> None:
    err = rejected(SEP1330_ENUMS, OLD)
    assert err.path == "/properties/titledSingle"
    assert err.keyword == "oneOf"
    with pytest.raises(SchemaNotAllowed) as info:
        downlevel(SEP1330_ENUMS, OLD)
    assert (info.value.path, info.value.keyword) == ("/properties/untitledMulti", "type")
    assert info.value.inexpressible_in == OLD  # a valid form a 2025-06-18 client cannot get
    assert err.inexpressible_in is None  # checked as written: refused, not down-levelled


def test_builders_reproduce_the_conformance_schemas_exactly() -> None:
    sep1034 = object_schema(
        {
            "name": string_field(description="User name", default="John Doe"),
            "age": integer_field(description="User age", default=30),
            "score": number_field(description="User score", default=95.5),
            "status": enum_field(
                ["active", "inactive", "pending"], description="User status", default="active"
            ),
            "verified": boolean_field(description="Verification status", default=True),
        }
    )
    assert sep1034 == SEP1034_DEFAULTS
    assert json.dumps(sep1034) == json.dumps(SEP1034_DEFAULTS)  # same key order too
    sep1330 = object_schema(
        {
            "untitledSingle": enum_field(
                ["option1", "option2", "option3"], description="Select one option"
            ),
            "titledSingle": enum_field(
                {"value1": "First Option", "value2": "Second Option", "value3": "Third Option"},
                description="Select one option with titles",
            ),
            "legacyEnum": enum_field(
                {"opt1": "Option One", "opt2": "Option Two", "opt3": "Option Three"},
                description="Select one option (legacy)",
                legacy_names=True,
            ),
            "untitledMulti": multi_select_field(
                ["option1", "option2", "option3"],
                description="Select multiple options",
                min_items=1,
                max_items=3,
            ),
            "titledMulti": multi_select_field(
                {"value1": "First Choice", "value2": "Second Choice", "value3": "Third Choice"},
                description="Select multiple options with titles",
                min_items=1,
                max_items=3,
            ),
        }
    )
    assert sep1330 == SEP1330_ENUMS


def test_conformance_checks_on_sep1330_shapes() -> None:
    p = SEP1330_ENUMS["properties"]
    assert "oneOf" not in p["untitledSingle"]
    assert "enumNames" not in p["untitledSingle"]
    assert "enum" not in p["titledSingle"]
    assert len(p["legacyEnum"]["enum"]) == len(p["legacyEnum"]["enumNames"])
    assert "anyOf" not in p["untitledMulti"]["items"]
    assert "enum" not in p["titledMulti"]["items"]
    kinds = {n: field_kind(v) for n, v in p.items()}
    assert kinds == {
        "untitledSingle": FieldKind.SINGLE_SELECT,
        "titledSingle": FieldKind.TITLED_SINGLE_SELECT,
        "legacyEnum": FieldKind.LEGACY_SINGLE_SELECT,
        "untitledMulti": FieldKind.MULTI_SELECT,
        "titledMulti": FieldKind.TITLED_MULTI_SELECT,
    }
    assert enum_options(p["titledSingle"])[0] == ("value1", "First Option")
    assert enum_options(p["legacyEnum"])[2] == ("opt3", "Option Three")
    assert enum_options(p["untitledMulti"]) == (
        ("option1", None),
        ("option2", None),
        ("option3", None),
    )
    with pytest.raises(ValueError, match="not a select"):
        enum_options({"type": "string"})


# --------------------------------------------------------------------------------------------
# Per field type, per keyword, per version
# --------------------------------------------------------------------------------------------

TITLED_ONE_OF = [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]

# (property schema, versions that accept it)
ALLOWED: list[tuple[dict[str, Any], tuple[str, ...]]] = [
    ({"type": "string"}, ALL),
    ({"type": "string", "title": "T", "description": "D"}, ALL),
    ({"type": "string", "minLength": 0, "maxLength": 10}, ALL),
    ({"type": "string", "minLength": 3, "maxLength": 3}, ALL),
    ({"type": "string", "format": "email"}, ALL),
    ({"type": "string", "format": "uri"}, ALL),
    ({"type": "string", "format": "date"}, ALL),
    ({"type": "string", "format": "date-time"}, ALL),
    ({"type": "string", "default": "x"}, NEWER),
    ({"type": "string", "format": "date", "default": "2026-02-02"}, NEWER),
    ({"type": "number"}, ALL),
    ({"type": "number", "minimum": -1.5, "maximum": 2}, ALL),
    ({"type": "number", "default": 95.5}, NEWER),
    ({"type": "integer", "minimum": 0, "maximum": 10}, ALL),
    ({"type": "integer", "default": 30}, NEWER),
    ({"type": "integer", "default": 30.0}, NEWER),
    ({"type": "boolean"}, ALL),
    ({"type": "boolean", "default": False}, ALL),
    ({"type": "string", "enum": ["a"]}, ALL),
    ({"type": "string", "enum": ["a", "b"], "default": "b"}, NEWER),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]}, ALL),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"], "default": "a"}, NEWER),
    ({"type": "string", "oneOf": TITLED_ONE_OF}, NEWER),
    ({"type": "string", "oneOf": TITLED_ONE_OF, "default": "a"}, NEWER),
    ({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}, NEWER),
    (
        {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["a", "b"]},
            "default": ["b"],
        },
        NEWER,
    ),
    ({"type": "array", "items": {"anyOf": TITLED_ONE_OF}, "default": []}, NEWER),
    ({"type": "array", "minItems": 2, "items": {"anyOf": TITLED_ONE_OF}}, NEWER),
]


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize(("prop", "versions"), ALLOWED, ids=lambda v: json.dumps(v)[:60])
def test_allowed_property_per_version(
    prop: dict[str, Any], versions: tuple[str, ...], version: str
) -> None:
    schema = form(f=prop)
    if version in versions:
        check_requested_schema(schema, version)
    else:
        err = rejected(schema, version)
        assert err.path == "/properties/f"
        assert err.keyword in ("default", "oneOf", "type")


# (property schema, keyword expected in the error, sub-path below /properties/f)
REJECTED: list[tuple[Any, str, str]] = [
    # not a primitive / nesting
    ({"type": "object", "properties": {}}, "type", ""),
    ({"type": "null"}, "type", ""),
    ({"type": ["string", "null"]}, "type", ""),
    ({"$ref": "#/$defs/x"}, "$ref", ""),
    ({"anyOf": [{"type": "string"}]}, "anyOf", ""),
    ({"description": "no type"}, "type", ""),
    ("string", "type", ""),
    ({"type": "array", "items": {"type": "string"}}, "enum", "/items"),
    ({"type": "array", "items": {"type": "integer", "enum": ["a"]}}, "type", "/items"),
    ({"type": "array", "items": {"type": "object"}}, "type", "/items"),
    ({"type": "array"}, "items", ""),
    ({"type": "array", "items": ["a"]}, "items", ""),
    # keywords outside the subset
    ({"type": "string", "pattern": "^a$"}, "pattern", ""),
    ({"type": "string", "format": "binary"}, "format", ""),
    ({"type": "string", "format": "ipv4"}, "format", ""),
    ({"type": "string", "format": 1}, "format", ""),
    ({"type": "string", "const": "a"}, "const", ""),
    ({"type": "string", "examples": ["a"]}, "examples", ""),
    ({"type": "string", "x-widget": "textarea"}, "x-widget", ""),
    ({"type": "string", "$ref": "#/x"}, "$ref", ""),
    ({"type": "number", "exclusiveMinimum": 0}, "exclusiveMinimum", ""),
    ({"type": "number", "multipleOf": 2}, "multipleOf", ""),
    ({"type": "integer", "minLength": 2}, "minLength", ""),
    ({"type": "boolean", "enum": [True]}, "enum", ""),
    ({"type": "string", "enum": ["a"], "minLength": 1}, "minLength", ""),
    ({"type": "string", "enum": ["a"], "oneOf": TITLED_ONE_OF}, "oneOf", ""),
    ({"type": "string", "oneOf": TITLED_ONE_OF, "enumNames": ["A", "B"]}, "enumNames", ""),
    ({"type": "string", "enumNames": ["A"]}, "enumNames", ""),
    ({"type": "array", "uniqueItems": True, "items": {"anyOf": TITLED_ONE_OF}}, "uniqueItems", ""),
    ({"type": "array", "items": {"type": "string", "enum": ["a"], "x": 1}}, "x", "/items"),
    ({"type": "array", "items": {"anyOf": TITLED_ONE_OF, "type": "string"}}, "type", "/items"),
    # wrong types of keyword values
    ({"type": "string", "title": 1}, "title", ""),
    ({"type": "string", "description": None}, "description", ""),
    ({"type": "string", "minLength": -1}, "minLength", ""),
    ({"type": "string", "minLength": 1.0}, "minLength", ""),
    ({"type": "string", "maxLength": True}, "maxLength", ""),
    ({"type": "string", "minLength": 3, "maxLength": 2}, "minLength", ""),
    ({"type": "number", "minimum": "0"}, "minimum", ""),
    ({"type": "number", "maximum": True}, "maximum", ""),
    ({"type": "number", "maximum": float("inf")}, "maximum", ""),
    ({"type": "number", "minimum": float("nan")}, "minimum", ""),
    ({"type": "number", "minimum": 2, "maximum": 1}, "minimum", ""),
    ({"type": "string", "enum": []}, "enum", ""),
    ({"type": "string", "enum": "ab"}, "enum", ""),
    ({"type": "string", "enum": ["a", 1]}, "enum", ""),
    ({"type": "string", "enum": ["a", "a"]}, "enum", ""),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}, "enumNames", ""),
    ({"type": "string", "enum": ["a"], "enumNames": [1]}, "enumNames", ""),
    ({"type": "string", "oneOf": []}, "oneOf", ""),
    ({"type": "string", "oneOf": [{"const": "a"}]}, "title", "/oneOf/0"),
    ({"type": "string", "oneOf": [{"const": 1, "title": "A"}]}, "const", "/oneOf/0"),
    ({"type": "string", "oneOf": [{"const": "a", "title": "A", "x": 1}]}, "x", "/oneOf/0"),
    ({"type": "string", "oneOf": ["a"]}, "const", "/oneOf/0"),
    ({"type": "string", "oneOf": [*TITLED_ONE_OF, TITLED_ONE_OF[0]]}, "oneOf", ""),
    ({"type": "array", "items": {"anyOf": [{"const": "a"}]}}, "title", "/items/anyOf/0"),
    ({"type": "array", "minItems": 3, "items": {"anyOf": TITLED_ONE_OF}}, "minItems", ""),
    ({"type": "array", "minItems": 2, "maxItems": 1, "items": {"enum": ["a"]}}, "minItems", ""),
    # defaults not matching their field
    ({"type": "string", "default": 1}, "default", ""),
    ({"type": "string", "maxLength": 2, "default": "abc"}, "default", ""),
    ({"type": "string", "format": "email", "default": "nope"}, "default", ""),
    ({"type": "number", "default": "1"}, "default", ""),
    ({"type": "number", "default": True}, "default", ""),
    ({"type": "number", "default": float("nan")}, "default", ""),
    ({"type": "integer", "default": 1.5}, "default", ""),
    ({"type": "integer", "minimum": 0, "default": -1}, "default", ""),
    ({"type": "number", "maximum": 1, "default": 1.5}, "default", ""),
    ({"type": "boolean", "default": "true"}, "default", ""),
    ({"type": "boolean", "default": 1}, "default", ""),
    ({"type": "string", "enum": ["a"], "default": "b"}, "default", ""),
    ({"type": "string", "oneOf": TITLED_ONE_OF, "default": "A"}, "default", ""),
    ({"type": "array", "items": {"anyOf": TITLED_ONE_OF}, "default": "a"}, "default", ""),
    ({"type": "array", "items": {"anyOf": TITLED_ONE_OF}, "default": ["c"]}, "default", ""),
    ({"type": "array", "items": {"anyOf": TITLED_ONE_OF}, "default": ["a", "a"]}, "default", ""),
    (
        {"type": "array", "minItems": 1, "items": {"anyOf": TITLED_ONE_OF}, "default": []},
        "default",
        "",
    ),
]


@pytest.mark.parametrize("version", NEWER)
@pytest.mark.parametrize(("prop", "keyword", "sub"), REJECTED, ids=lambda v: str(v)[:50])
def test_rejected_property(prop: Any, keyword: str, sub: str, version: str) -> None:
    err = rejected(form(f=prop), version)
    assert (err.path, err.keyword) == ("/properties/f" + sub, keyword)
    assert str(err)  # says what happened


@pytest.mark.parametrize(
    ("schema", "path", "keyword"),
    [
        ({"type": "object", "properties": {}}, "", "properties"),
        ({"type": "object"}, "", "properties"),
        ({"type": "object", "properties": []}, "", "properties"),
        ({"properties": {"a": {"type": "string"}}}, "", "type"),
        ({"type": "array", "properties": {"a": {"type": "string"}}}, "", "type"),
        (["type", "object"], "", "type"),
        ({"type": "object", "properties": {"": {"type": "string"}}}, "/properties", "properties"),
        (form(a={"type": "string"}) | {"required": ["b"]}, "", "required"),
        (form(a={"type": "string"}) | {"required": ["a", "a"]}, "", "required"),
        (form(a={"type": "string"}) | {"required": "a"}, "", "required"),
        (form(a={"type": "string"}) | {"title": "Form"}, "", "title"),
        (form(a={"type": "string"}) | {"additionalProperties": False}, "", "additionalProperties"),
        (form(a={"type": "string"}) | {"$defs": {}}, "", "$defs"),
        (form(a={"type": "string"}) | {"$schema": 7}, "", "$schema"),
        (form(**{"a/b~c": {"type": "string", "x": 1}}), "/properties/a~1b~0c", "x"),
    ],
)
def test_rejected_top_level(schema: Any, path: str, keyword: str) -> None:
    err = rejected(schema, NEW)
    assert (err.path, err.keyword) == (path, keyword)


def test_dollar_schema_only_from_2025_11_25() -> None:
    schema = form(a={"type": "string"}) | {
        "$schema": "https://json-schema.org/draft/2020-12/schema"
    }
    check_requested_schema(schema, MID)
    check_requested_schema(schema, NEW)
    assert rejected(schema, OLD).keyword == "$schema"
    assert "$schema" not in downlevel(schema, OLD)


def test_size_limit_is_64_kib_of_json() -> None:
    big = "x" * (MAX_SCHEMA_BYTES - 100)
    check_requested_schema(form(a={"type": "string", "description": big}), NEW)
    err = rejected(form(a={"type": "string", "description": big + "y" * 200}), NEW)
    assert (err.path, err.keyword) == ("", "size")
    # measured on UTF-8 bytes, not characters
    wide = "é" * (MAX_SCHEMA_BYTES // 2)
    assert rejected(form(a={"type": "string", "description": wide}), NEW).keyword == "size"


def test_unknown_versions_are_refused() -> None:
    for version in ("2025-03-26", "2024-11-05", "latest", ""):
        with pytest.raises(ValueError, match="no form elicitation"):
            check_requested_schema(TOOLS_CALL_ELICITATION, version)
        with pytest.raises(ValueError, match="no form elicitation"):
            downlevel(TOOLS_CALL_ELICITATION, version)


# --------------------------------------------------------------------------------------------
# downlevel
# --------------------------------------------------------------------------------------------


def test_downlevel_2025_06_18_converts_titled_enums_and_strips_defaults() -> None:
    schema = object_schema(
        {
            "size": enum_field({"s": "Small", "m": "Medium"}, title="Size", default="m"),
            "plain": enum_field(["x", "y"], default="y"),
            "legacy": enum_field({"p": "P"}, legacy_names=True, default="p"),
            "n": number_field(minimum=1, default=2),
            "ok": boolean_field(default=False),
            "name": string_field(max_length=5, default="abc"),
        },
        required=["size"],
    )
    before = copy.deepcopy(schema)
    old = downlevel(schema, OLD)
    assert schema == before  # input untouched
    assert old == {
        "type": "object",
        "properties": {
            "size": {
                "type": "string",
                "title": "Size",
                "enum": ["s", "m"],
                "enumNames": ["Small", "Medium"],
            },
            "plain": {"type": "string", "enum": ["x", "y"]},
            "legacy": {"type": "string", "enum": ["p"], "enumNames": ["P"]},
            "n": {"type": "number", "minimum": 1},
            "ok": {"type": "boolean", "default": False},
            "name": {"type": "string", "maxLength": 5},
        },
        "required": ["size"],
    }
    check_requested_schema(old, OLD)


@pytest.mark.parametrize("version", NEWER)
def test_downlevel_newer_versions_is_a_checked_copy(version: str) -> None:
    out = downlevel(SEP1330_ENUMS, version)
    assert out == SEP1330_ENUMS
    assert out is not SEP1330_ENUMS
    out["properties"]["x"] = {"type": "string"}
    assert "x" not in SEP1330_ENUMS["properties"]


def test_downlevel_refuses_what_the_newest_version_refuses() -> None:
    with pytest.raises(SchemaNotAllowed) as info:
        downlevel(form(a={"type": "string", "pattern": "x"}), OLD)
    assert info.value.inexpressible_in is None  # no version has it


def test_downlevel_accepts_frozen_schemas() -> None:
    out = downlevel(freeze(SEP1034_DEFAULTS), OLD)
    assert type(out) is dict
    assert type(out["properties"]) is dict
    out["properties"]["name"]["title"] = "mutable"


# --------------------------------------------------------------------------------------------
# Checked schemas (RequestedSchema)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "version"),
    [
        (form(a={"type": "string", "pattern": "x"}), NEW),
        (form(), NEW),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, NEW),
        (form(a={"type": "string", "default": "x"}), OLD),
        (form(a={"type": "string", "description": "x" * MAX_SCHEMA_BYTES}), NEW),
        ([], NEW),
    ],
)
def test_a_requested_schema_exists_only_for_what_the_check_accepts(
    schema: Any, version: str
) -> None:
    expected = rejected(schema, version)
    with pytest.raises(SchemaNotAllowed) as info:
        RequestedSchema(schema, version)
    assert (info.value.path, info.value.keyword, info.value.detail) == (
        expected.path,
        expected.keyword,
        expected.detail,
    )
    with pytest.raises(ValueError, match="no form elicitation"):
        RequestedSchema(TOOLS_CALL_ELICITATION, "2025-03-26")


def test_a_requested_schema_is_frozen_json_with_its_version_and_size() -> None:
    checked = RequestedSchema(SEP1330_ENUMS, MID)
    assert checked == SEP1330_ENUMS
    assert (checked.version, RequestedSchema(SEP1330_ENUMS).version) == (MID, NEW)
    compact = json.dumps(SEP1330_ENUMS, separators=(",", ":"), ensure_ascii=False)
    assert checked.size == len(compact.encode())
    assert json.dumps(checked) == json.dumps(SEP1330_ENUMS)
    assert isinstance(checked, FrozenDict)
    with pytest.raises(TypeError, match="immutable"):
        checked["x"] = 1
    with pytest.raises(TypeError, match="immutable"):
        checked["properties"]["untitledMulti"]["items"]["enum"].append("x")
    assert checked.digest == schema_digest(checked) == schema_digest(SEP1330_ENUMS)
    assert freeze(checked) is checked
    assert copy.copy(checked) is checked
    again = pickle.loads(pickle.dumps(checked))
    assert (type(again), again, again.version, again.size) == (
        RequestedSchema,
        checked,
        MID,
        checked.size,
    )
    assert "RequestedSchema(" in repr(checked)


def test_a_requested_schema_is_allowed_in_its_subset_and_every_wider_one() -> None:
    plain = form(a={"type": "string"})
    assert all(RequestedSchema(plain, OLD).allowed_in(v) for v in ALL)
    for version in NEWER:
        checked = RequestedSchema(plain, version)
        assert [checked.allowed_in(v) for v in ALL] == [False, True, True]
    with pytest.raises(ValueError, match="no form elicitation"):
        RequestedSchema(plain).allowed_in("2025-03-26")


def test_for_version_is_the_down_levelled_schema_as_a_checked_value() -> None:
    checked = RequestedSchema(SEP1034_DEFAULTS)
    old = checked.for_version(OLD)
    assert (type(old), old.version, old) == (
        RequestedSchema,
        OLD,
        downlevel(SEP1034_DEFAULTS, OLD),
    )
    assert old.for_version(NEW) is old  # a 2025-06-18 schema is in every newer subset
    for version in NEWER:
        assert checked.for_version(version) is checked
    with pytest.raises(SchemaNotAllowed) as info:
        RequestedSchema(SEP1330_ENUMS).for_version(OLD)
    assert (info.value.path, info.value.keyword) == ("/properties/untitledMulti", "type")


def test_checked_schema_takes_a_checked_schema_as_it_is_and_checks_anything_else() -> None:
    checked = RequestedSchema(SEP1034_DEFAULTS, MID)
    assert checked_schema(checked, NEW) is checked
    raw = checked_schema(TOOLS_CALL_ELICITATION, OLD)
    assert (type(raw), raw.version, raw) == (RequestedSchema, OLD, TOOLS_CALL_ELICITATION)
    # checked for a wider subset than the client's: checked again for the client's version
    with pytest.raises(SchemaNotAllowed) as info:
        checked_schema(checked, OLD)
    assert info.value.keyword == "default"
    narrowed = checked_schema(RequestedSchema(TOOLS_CALL_ELICITATION, MID), OLD)
    assert narrowed.version == OLD


def test_a_requested_schema_is_checked_once_however_often_it_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import erlmcp_py.core.schema._checked as schema_module  # where RequestedSchema walks

    walks: list[str] = []
    walk = schema_module._check

    def counted(schema: Any, version: str) -> int:
        walks.append(version)
        return walk(schema, version)

    monkeypatch.setattr(schema_module, "_check", counted)
    checked = RequestedSchema(SEP1034_DEFAULTS)
    for version in NEWER:
        assert checked_schema(checked, version) is checked.for_version(version) is checked
    assert walks == [NEW]
    checked.for_version(OLD)  # a new value, for another subset: checked once, for it
    assert walks == [NEW, OLD]


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


def test_builders_shapes() -> None:
    assert string_field() == {"type": "string"}
    assert string_field(title="E", format="email", min_length=3, max_length=9) == {
        "type": "string",
        "title": "E",
        "minLength": 3,
        "maxLength": 9,
        "format": "email",
    }
    assert integer_field(minimum=0, maximum=5, default=0) == {
        "type": "integer",
        "minimum": 0,
        "maximum": 5,
        "default": 0,
    }
    assert number_field(default=0.0) == {"type": "number", "default": 0.0}
    assert boolean_field(default=False) == {"type": "boolean", "default": False}
    assert enum_field(["a", "b"]) == {"type": "string", "enum": ["a", "b"]}
    assert enum_field({"a": "A"}) == {"type": "string", "oneOf": [{"const": "a", "title": "A"}]}
    assert multi_select_field({"a": "A"}, default=["a"]) == {
        "type": "array",
        "items": {"anyOf": [{"const": "a", "title": "A"}]},
        "default": ["a"],
    }
    assert multi_select_field(("a",), max_items=1) == {
        "type": "array",
        "maxItems": 1,
        "items": {"type": "string", "enum": ["a"]},
    }
    assert object_schema({"a": string_field()}, ["a"]) == form(a={"type": "string"}) | {
        "required": ["a"]
    }


@pytest.mark.parametrize(
    ("build", "keyword"),
    [
        (lambda: string_field(format="phone"), "format"),
        (lambda: string_field(min_length=-1), "minLength"),
        (lambda: string_field(max_length=1, default="ab"), "default"),
        (lambda: integer_field(minimum=3, maximum=1), "minimum"),
        (lambda: integer_field(default=True), "default"),
        (lambda: number_field(maximum=float("inf")), "maximum"),
        (lambda: enum_field([]), "enum"),
        (lambda: enum_field(["a", "a"]), "enum"),
        (lambda: enum_field(["a"], default="b"), "default"),
        (lambda: multi_select_field(["a"], min_items=2), "minItems"),
        (lambda: multi_select_field({"a": "A"}, default=["b"]), "default"),
        (lambda: object_schema({}), "properties"),
        (lambda: object_schema({"a": string_field()}, ["b"]), "required"),
    ],
)
def test_builders_refuse_what_mcp_refuses(build: Any, keyword: str) -> None:
    with pytest.raises(SchemaNotAllowed) as info:
        build()
    assert info.value.keyword == keyword


def test_enum_field_refuses_a_bare_string_as_options() -> None:
    with pytest.raises(TypeError, match="sequence of strings"):
        enum_field("abc")


def test_object_schema_copies_its_properties() -> None:
    prop = string_field()
    schema = object_schema({"a": prop})
    prop["title"] = "changed"
    assert "title" not in schema["properties"]["a"]


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------

FORMAT_CASES: list[tuple[str, str, bool]] = [
    ("email", "octocat@github.com", True),
    ("email", "first.last+tag@example.co.uk", True),
    ("email", "user@localhost", True),
    ("email", '"john doe"@example.com', True),
    ("email", "joe@[127.0.0.1]", True),
    ("email", "joe@[IPv6:::1]", True),
    ("email", "ünïcode@exämple.de", True),
    ("email", "plainaddress", False),
    ("email", "@example.com", False),
    ("email", "user@", False),
    ("email", "user@@example.com", False),
    ("email", ".user@example.com", False),
    ("email", "us..er@example.com", False),
    ("email", "user.@example.com", False),
    ("email", "us er@example.com", False),
    ("email", "user@exa mple.com", False),
    ("email", "user@-example.com", False),
    ("email", "user@example..com", False),
    ("email", "joe@[127.0.0.300]", False),
    ("email", "user@example.com\n", False),
    ("email", "a" * 65 + "@example.com", False),
    ("uri", "https://example.com/path?q=1#f", True),
    ("uri", "mailto:someone@example.com", True),
    ("uri", "urn:isbn:0451450523", True),
    ("uri", "https://[::1]:8443/", True),
    ("uri", "/relative/path", False),
    ("uri", "example.com", False),
    ("uri", "https://exa mple.com", False),
    ("uri", "https://example.com/\n", False),
    ("uri", "", False),
    ("date", "2026-02-02", True),
    ("date", "2024-02-29", True),
    ("date", "2023-02-29", False),
    ("date", "2026-13-01", False),
    ("date", "2026-2-2", False),
    ("date", "20260202", False),
    ("date", "2026-02-02T00:00:00Z", False),
    ("date", "٢٠٢٦-٠٢-٠٢", False),  # non-ASCII digits
    ("date", "2026-02-02\n", False),
    ("date-time", "2025-01-31T09:30:00Z", True),
    ("date-time", "2025-01-31t09:30:00z", True),
    ("date-time", "2025-01-31T09:30:00.123+02:00", True),
    ("date-time", "2025-01-31T09:30:00", False),  # no offset
    ("date-time", "2025-01-31 09:30:00Z", False),
    ("date-time", "2025-02-30T09:30:00Z", False),
    ("date-time", "2025-01-31T24:00:00Z", False),
    ("date-time", "2025-01-31", False),
    ("date-time", "2025-01-31T09:30:00Z\n", False),
]


@pytest.mark.parametrize(("fmt", "value", "ok"), FORMAT_CASES)
def test_formats_are_enforced(fmt: str, value: str, ok: bool) -> None:
    assert check_format(fmt, value) is ok


def test_exactly_four_formats() -> None:
    assert set(FORMATS) == {"email", "uri", "date", "date-time"}
    with pytest.raises(KeyError):
        check_format("ipv4", "127.0.0.1")


# --------------------------------------------------------------------------------------------
# Frozen schemas and digests
# --------------------------------------------------------------------------------------------


def test_freeze_is_deep_immutable_and_still_json() -> None:
    f = freeze(SEP1330_ENUMS)
    assert isinstance(f, dict)
    assert f == SEP1330_ENUMS
    assert json.dumps(f) == json.dumps(SEP1330_ENUMS)
    assert type(f["properties"]["titledSingle"]["oneOf"]) is FrozenList
    with pytest.raises(TypeError, match="immutable"):
        f["x"] = 1
    with pytest.raises(TypeError, match="immutable"):
        f["properties"]["untitledMulti"]["items"]["enum"].append("x")
    for mutate in (
        lambda d: d.update(a=1),
        lambda d: d.pop("type"),
        lambda d: d.setdefault("a", 1),
        lambda d: d.clear(),
        lambda d: d.popitem(),
        lambda d: d.__delitem__("type"),
        lambda d: d.__ior__({"a": 1}),
    ):
        with pytest.raises(TypeError):
            mutate(f)
    assert f == SEP1330_ENUMS
    assert freeze(f) is f
    assert copy.copy(f) is f
    assert copy.deepcopy(f) is f
    again = pickle.loads(pickle.dumps(f))
    assert type(again) is FrozenDict
    assert again == f
    assert again.digest == f.digest
    plain = thaw(f)
    assert type(plain) is dict
    assert type(plain["properties"]["titledSingle"]["oneOf"]) is list
    plain["x"] = 1
    assert "FrozenDict(" in repr(f)


def test_digest_is_canonical() -> None:
    a = {"type": "object", "properties": {"x": {"type": "string", "title": "é"}}}
    b = {"properties": {"x": {"title": "é", "type": "string"}}, "type": "object"}
    assert schema_digest(a) == schema_digest(b) == freeze(b).digest
    assert canonical_json(a) == '{"properties":{"x":{"title":"é","type":"string"}},"type":"object"}'
    assert schema_digest(a) != schema_digest(form(x={"type": "string"}))
    assert len(schema_digest(a)) == 64


# --------------------------------------------------------------------------------------------
# Property tests: random allowed schemas
# --------------------------------------------------------------------------------------------

_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
_opts = st.lists(st.text(max_size=6), min_size=1, max_size=5, unique=True)
_SAMPLES = {
    "email": ["ann@example.com", "b.c+d@host.org", "x@localhost"],
    "uri": ["https://example.com/", "urn:x:y", "mailto:a@b.c"],
    "date": ["2026-02-02", "1999-12-31", "2024-02-29"],
    "date-time": ["2025-01-31T09:30:00Z", "2025-01-31T09:30:00.5+02:00"],
}


@st.composite
def string_props(draw: st.DrawFn) -> dict[str, Any]:
    p: dict[str, Any] = {"type": "string"}
    fmt = draw(st.sampled_from([None, *FORMATS]))
    if fmt is not None:
        p["format"] = fmt
        if draw(st.booleans()):
            p["minLength"] = draw(st.integers(0, 5))
        if draw(st.booleans()):
            p["maxLength"] = draw(st.integers(40, 80))
        if draw(st.booleans()):
            p["default"] = draw(st.sampled_from(_SAMPLES[fmt]))
        return p
    lo = draw(st.none() | st.integers(0, 5))
    hi = draw(st.none() | st.integers(lo or 0, 12))
    if lo is not None:
        p["minLength"] = lo
    if hi is not None:
        p["maxLength"] = hi
    if draw(st.booleans()):
        p["default"] = draw(st.text(min_size=lo or 0, max_size=hi if hi is not None else 10))
    return p


@st.composite
def number_props(draw: st.DrawFn) -> dict[str, Any]:
    t = draw(st.sampled_from(["number", "integer"]))
    p: dict[str, Any] = {"type": t}
    lo = draw(st.none() | st.integers(-100, 100))
    hi = draw(st.none() | st.integers(lo if lo is not None else -100, 200))
    if lo is not None:
        p["minimum"] = lo
    if hi is not None:
        p["maximum"] = hi
    if draw(st.booleans()):
        lo2, hi2 = (lo if lo is not None else -1000), (hi if hi is not None else 1000)
        if t == "integer":
            p["default"] = draw(st.integers(lo2, hi2))
        else:
            p["default"] = draw(st.floats(lo2, hi2, allow_nan=False))
    return p


@st.composite
def select_props(draw: st.DrawFn) -> dict[str, Any]:
    opts = draw(_opts)
    shape = draw(st.sampled_from(["enum", "legacy", "titled", "multi", "titled_multi"]))
    p: dict[str, Any] = {"type": "array" if "multi" in shape else "string"}
    if shape == "enum":
        p["enum"] = opts
    elif shape == "legacy":
        p["enum"] = opts
        p["enumNames"] = [o.upper() for o in opts]
    elif shape == "titled":
        p["oneOf"] = [{"const": o, "title": f"T {o}"} for o in opts]
    else:
        lo = draw(st.none() | st.integers(0, len(opts)))
        hi = draw(st.none() | st.integers(lo or 0, len(opts) + 1))
        if lo is not None:
            p["minItems"] = lo
        if hi is not None:
            p["maxItems"] = hi
        if shape == "multi":
            p["items"] = {"type": "string", "enum": opts}
        else:
            p["items"] = {"anyOf": [{"const": o, "title": f"T {o}"} for o in opts]}
        if draw(st.booleans()):
            size = draw(st.integers(lo or 0, min(hi if hi is not None else len(opts), len(opts))))
            p["default"] = draw(st.permutations(opts))[:size]
        return p
    if draw(st.booleans()):
        p["default"] = draw(st.sampled_from(opts))
    return p


@st.composite
def bool_props(draw: st.DrawFn) -> dict[str, Any]:
    p: dict[str, Any] = {"type": "boolean"}
    if draw(st.booleans()):
        p["default"] = draw(st.booleans())
    return p


def property_schemas() -> st.SearchStrategy[dict[str, Any]]:
    """Any property schema of the 2025-11-25 subset (with title/description sometimes)."""

    @st.composite
    def decorated(draw: st.DrawFn) -> dict[str, Any]:
        p = draw(st.one_of(string_props(), number_props(), select_props(), bool_props()))
        if draw(st.booleans()):
            p["title"] = draw(st.text(max_size=10))
        if draw(st.booleans()):
            p["description"] = draw(st.text(max_size=20))
        return p

    return decorated()


@st.composite
def requested_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A random requestedSchema that the newest version allows."""
    props = draw(st.dictionaries(_names, property_schemas(), min_size=1, max_size=6))
    required = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
    return {"type": "object", "properties": props, "required": required}


_FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(requested_schemas())
def test_random_allowed_schemas_are_accepted(schema: dict[str, Any]) -> None:
    check_requested_schema(schema, MID)
    check_requested_schema(schema, NEW)
    f = freeze(schema)
    assert f.digest == schema_digest(schema)
    check_requested_schema(f, NEW)
    checked = RequestedSchema(schema)
    assert checked == schema
    assert checked.size == len(
        json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode()
    )


@_FAST
@given(requested_schemas())
def test_random_schemas_downlevel_or_refuse_for_2025_06_18(schema: dict[str, Any]) -> None:
    kinds = {field_kind(p) for p in schema["properties"].values()}
    if kinds & {FieldKind.MULTI_SELECT, FieldKind.TITLED_MULTI_SELECT}:
        with pytest.raises(SchemaNotAllowed) as info:
            downlevel(schema, OLD)
        assert info.value.keyword == "type"
        return
    old = downlevel(schema, OLD)
    check_requested_schema(old, OLD)
    assert RequestedSchema(schema).for_version(OLD) == old
    for name, prop in old["properties"].items():
        assert ("default" in prop) == (prop["type"] == "boolean" and "default" in prop)
        # the same options survive, with their titles
        if prop["type"] == "string" and "enum" in prop:
            assert [v for v, _ in enum_options(prop)] == [
                v for v, _ in enum_options(schema["properties"][name])
            ]


_UNKNOWN = st.sampled_from(
    ["pattern", "$ref", "const", "not", "allOf", "if", "examples", "readOnly", "x", "properties"]
)


@_FAST
@given(requested_schemas(), st.data())
def test_an_unknown_keyword_anywhere_is_rejected_at_its_path(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(sorted(schema["properties"])))
    keyword = data.draw(_UNKNOWN)
    prop = schema["properties"][name]
    target, sub = prop, ""
    if "items" in prop and data.draw(st.booleans()):
        target, sub = prop["items"], "/items"
    target[keyword] = {"type": "string"}
    err = rejected(schema, NEW)
    token = name.replace("~", "~0").replace("/", "~1")
    assert err.path == f"/properties/{token}{sub}"
    # a "not"/"const"/... next to a valid "type" is reported as itself
    assert err.keyword == keyword


@_FAST
@given(requested_schemas(), st.data())
def test_nesting_is_rejected(schema: dict[str, Any], data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(schema["properties"])))
    schema["properties"][name] = {"type": "object", "properties": {"inner": {"type": "string"}}}
    err = rejected(schema, NEW)
    assert err.keyword == "type"
