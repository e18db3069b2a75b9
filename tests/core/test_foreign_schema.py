"""Form schemas of other SDKs: their harmless annotations dropped and named, nothing else
touched, so the MCP subset check judges the rest as strictly as ever."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.foreign_schema import (
    PROPERTY_ANNOTATIONS,
    TOP_ANNOTATIONS,
    read_foreign_schema,
)
from erlmcp_py.core.schema import RequestedSchema, boolean_field, enum_field, string_field

#: What the official Python SDK (mcp 2.3.0) sends for a pydantic model ``Person``.
SDK_PERSON = {
    "properties": {
        "name": {"description": "Your name", "title": "Name", "type": "string"},
        "age": {"maximum": 150, "minimum": 0, "title": "Age", "type": "integer"},
        "color": {"default": "red", "enum": ["red", "blue"], "title": "Color", "type": "string"},
        "subscribe": {"default": False, "title": "Subscribe", "type": "boolean"},
    },
    "required": ["name", "age"],
    "title": "Person",
    "type": "object",
}


def test_the_official_sdks_form_is_refused_as_it_is_and_accepted_once_read() -> None:
    with pytest.raises(SchemaNotAllowed) as refused:
        RequestedSchema(SDK_PERSON)
    assert refused.value.keyword == "title"
    read = read_foreign_schema(SDK_PERSON)
    assert read.dropped == ("/title",)
    checked = RequestedSchema(read.schema, "2025-11-25")
    assert checked["properties"] == SDK_PERSON["properties"]
    assert "title" not in checked


def test_every_annotation_is_dropped_and_named_the_top_first() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        "title": "T",
        "type": "object",
        "description": "D",
        "properties": {
            "a/b": {"type": "string", "examples": ["x"], "$comment": "c", "title": "A"},
        },
        "additionalProperties": {"type": "string"},
        "examples": [{}],
        "$comment": "top",
    }
    read = read_foreign_schema(schema)
    assert read.dropped == (
        "/$id",
        "/title",
        "/description",
        "/additionalProperties",
        "/examples",
        "/$comment",
        "/properties/a~1b/examples",
        "/properties/a~1b/$comment",
    )
    assert read.schema == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",  # the subset allows it
        "type": "object",
        "properties": {"a/b": {"type": "string", "title": "A"}},
    }
    RequestedSchema(read.schema)


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        ({"type": "object", "properties": {"x": {"type": "string", "pattern": "a"}}}, "pattern"),
        ({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {}}, "$defs"),
        ({"type": "object", "properties": {"x": {"type": "object"}}}, "type"),
        ({"type": "object", "properties": {}, "anyOf": []}, "anyOf"),
    ],
)
def test_what_constrains_an_answer_is_left_for_the_check_to_refuse(
    schema: dict[str, Any], keyword: str
) -> None:
    read = read_foreign_schema(schema)
    assert read.dropped == ()
    assert read.schema == schema
    with pytest.raises(SchemaNotAllowed) as refused:
        RequestedSchema(read.schema)
    assert refused.value.keyword == keyword


@pytest.mark.parametrize("value", [None, "x", 3, ["type"], {"type": "object", "properties": 3}])
def test_what_is_no_form_comes_back_as_it_is(value: Any) -> None:
    read = read_foreign_schema(value)
    assert read.schema == value
    assert read.dropped == ()


FIELDS = st.sampled_from(
    [
        string_field(title="Name", min_length=1),
        enum_field(["a", "b"]),
        boolean_field(default=True),
        {"type": "integer", "minimum": 0},
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    props=st.dictionaries(st.text(min_size=1, max_size=8), FIELDS, min_size=1, max_size=4),
    top=st.dictionaries(st.sampled_from(sorted(TOP_ANNOTATIONS)), JSON, max_size=4),
    per_field=st.dictionaries(st.sampled_from(sorted(PROPERTY_ANNOTATIONS)), JSON, max_size=2),
)
def test_a_form_with_annotations_reads_as_the_form_without_them(
    props: dict[str, Any], top: dict[str, Any], per_field: dict[str, Any]
) -> None:
    form = {"type": "object", "properties": props}
    RequestedSchema(form)
    annotated = {**top, **form, "properties": {k: {**v, **per_field} for k, v in props.items()}}
    read = read_foreign_schema(annotated)
    assert read.schema == form
    assert RequestedSchema(read.schema) == form
    assert len(read.dropped) == len(top) + len(per_field) * len(props)


@given(st.dictionaries(st.text(max_size=12), JSON, max_size=6))
def test_reading_never_fails_and_only_ever_drops_annotations(schema: dict[str, Any]) -> None:
    read = read_foreign_schema(schema)
    assert set(schema) - set(read.schema) <= TOP_ANNOTATIONS
    for key in read.schema:
        if key != "properties":
            assert read.schema[key] == schema[key]
