"""The required arguments a tool call lacks, and the form that asks for them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.core.tool_arguments import MissingArguments, missing_arguments

#: A tool's inputSchema as the official SDK lists it (pydantic's titles on every property).
BOOK = {
    "type": "object",
    "title": "bookArguments",
    "properties": {
        "city": {"title": "City", "type": "string"},
        "nights": {"title": "Nights", "type": "integer", "minimum": 1, "maximum": 30},
        "breakfast": {"title": "Breakfast", "type": "boolean", "default": False},
        "mood": {"type": "string", "enum": ["calm", "busy"], "$comment": "an annotation"},
        "where": {"type": "object", "properties": {"x": {"type": "number"}}},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["city", "nights"],
}


def with_required(*names: str) -> dict[str, Any]:
    return {**BOOK, "required": list(names)}


def test_the_form_asks_exactly_the_missing_arguments_with_their_constraints() -> None:
    missing = missing_arguments(BOOK, {"city": "Lisbon"})
    assert missing == MissingArguments(
        ("nights",),
        {
            "type": "object",
            "properties": {
                "nights": {"title": "Nights", "type": "integer", "minimum": 1, "maximum": 30}
            },
            "required": ["nights"],
        },
    )
    assert missing.form is not None
    RequestedSchema(missing.form, "2025-06-18")  # a form every client version can be asked


def test_an_annotation_the_form_subset_lacks_is_dropped_from_the_property() -> None:
    missing = missing_arguments(with_required("mood"), {})
    assert missing is not None
    assert missing.form is not None
    assert missing.form["properties"] == {"mood": {"type": "string", "enum": ["calm", "busy"]}}


def test_absent_arguments_are_no_arguments() -> None:
    missing = missing_arguments(BOOK, None)
    assert missing is not None
    assert missing.names == ("city", "nights")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("where", "'type' at /properties/where"),
        ("code", "'pattern' at /properties/code"),
        ("maybe", "'anyOf' at /properties/maybe"),
        ("ghost", "ghost: the schema does not describe it (/properties/ghost)"),
    ],
)
def test_an_argument_no_form_can_ask_leaves_no_form_and_says_why(name: str, why: str) -> None:
    missing = missing_arguments(with_required("city", name), {})
    assert missing is not None
    assert missing.names == ("city", name)
    assert missing.form is None
    assert missing.unaskable.startswith(why)


@pytest.mark.parametrize(
    ("schema", "arguments"),
    [
        (BOOK, {"city": "Lisbon", "nights": 2}),  # nothing missing
        ({"type": "object", "properties": {}}, {}),  # nothing required
        ({"type": "object", "required": "city"}, {}),  # not a list of names
        ({"type": "object", "required": [1]}, {}),
        (None, {}),  # the upstream listed no schema
        ([], {}),
        (BOOK, ["Lisbon"]),  # not an object: the upstream answers that itself
    ],
)
def test_nothing_to_ask(schema: object, arguments: object) -> None:
    assert missing_arguments(schema, arguments) is None


@given(st.dictionaries(st.sampled_from(["city", "nights", "breakfast", "x"]), st.integers()))
def test_the_names_are_the_required_ones_absent_in_schema_order(arguments: dict[str, int]) -> None:
    missing = missing_arguments(BOOK, arguments)
    expected = tuple(n for n in ("city", "nights") if n not in arguments)
    if not expected:
        assert missing is None
    else:
        assert missing is not None
        assert missing.names == expected
        assert missing.form is not None
        assert missing.form["required"] == list(expected)
