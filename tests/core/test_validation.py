"""Strict answer validation: per field type, no coercion, safe errors, cache, property tests."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.schema import (
    FORMATS,
    FieldKind,
    RequestedSchema,
    boolean_field,
    downlevel,
    enum_field,
    enum_options,
    field_kind,
    freeze,
    integer_field,
    multi_select_field,
    number_field,
    object_schema,
    string_field,
    thaw,
)
from erlmcp_py.core.validation import (
    AnswerError,
    CacheInfo,
    CompiledValidator,
    ValidationResult,
    ValidatorCache,
    cache_clear,
    cache_info,
    compile_validator,
    json_type,
    summarize,
    validate_answer,
)
from erlmcp_py.core.wording import json_pointer
from tests.core.test_schema import (
    _SAMPLES,
    SEP1034_DEFAULTS,
    SEP1330_ENUMS,
    TOOLS_CALL_ELICITATION,
    requested_schemas,
)


def one(prop: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return object_schema({"f": prop}, ["f"] if required else [])


def errors_of(schema: Any, content: Any) -> list[tuple[str, str]]:
    result = validate_answer(schema, content)
    assert result.ok is (not result.errors)
    return [(e.path, e.constraint) for e in result.errors]


# --------------------------------------------------------------------------------------------
# Table: per field type
# --------------------------------------------------------------------------------------------

TITLED = {"s": "Small", "m": "Medium"}

# (property, value, expected error constraint or None when valid)
CASES: list[tuple[dict[str, Any], Any, str | None]] = [
    # string
    (string_field(), "hello", None),
    (string_field(), "", None),
    (string_field(), 36, "type"),
    (string_field(), True, "type"),
    (string_field(), None, "type"),
    (string_field(), ["a"], "type"),
    (string_field(), {"a": 1}, "type"),
    (string_field(min_length=2), "a", "minLength"),
    (string_field(min_length=2), "ab", None),
    (string_field(max_length=2), "abc", "maxLength"),
    (string_field(max_length=2), "éé", None),  # code points, not bytes
    (string_field(max_length=1), "😀", None),
    (string_field(format="email"), "ann@example.com", None),
    (string_field(format="email"), "ann at example", "format"),
    (string_field(format="email"), "ann@", "format"),
    (string_field(format="uri"), "https://example.com/x", None),
    (string_field(format="uri"), "example.com/x", "format"),
    (string_field(format="uri"), "https://example.com/\n", "format"),
    (string_field(format="date"), "2026-02-02", None),
    (string_field(format="date"), "2026-02-30", "format"),
    (string_field(format="date"), "02/02/2026", "format"),
    (string_field(format="date-time"), "2026-02-02T10:00:00+01:00", None),
    (string_field(format="date-time"), "2026-02-02T10:00:00", "format"),
    (string_field(format="date-time"), "2026-02-02 10:00", "format"),
    (string_field(format="email"), 5, "type"),
    # integer: no coercion from strings or bools; integral floats are integers
    (integer_field(), 36, None),
    (integer_field(), 3.0, None),
    (integer_field(), -0.0, None),
    (integer_field(), "36", "type"),
    (integer_field(), True, "type"),
    (integer_field(), False, "type"),
    (integer_field(), 3.5, "type"),
    (integer_field(), None, "type"),
    (integer_field(), float("nan"), "type"),
    (integer_field(), float("inf"), "type"),
    (integer_field(minimum=18), 17, "minimum"),
    (integer_field(minimum=18), 18, None),
    (integer_field(maximum=5), 6.0, "maximum"),
    (integer_field(minimum=0, maximum=10), 10**30, "maximum"),
    # number
    (number_field(), 1.5, None),
    (number_field(), 88, None),
    (number_field(), "1.5", "type"),
    (number_field(), True, "type"),
    (number_field(), float("nan"), "finite"),
    (number_field(), float("inf"), "finite"),
    (number_field(), float("-inf"), "finite"),
    (number_field(minimum=0.5), 0.4, "minimum"),
    (number_field(maximum=1), 1.0000001, "maximum"),
    (number_field(minimum=-1, maximum=1), -1, None),
    # boolean
    (boolean_field(), True, None),
    (boolean_field(), False, None),
    (boolean_field(), "yes", "type"),
    (boolean_field(), "true", "type"),
    (boolean_field(), 1, "type"),
    (boolean_field(), 0, "type"),
    (boolean_field(), None, "type"),
    # single selects
    (enum_field(["a", "b"]), "a", None),
    (enum_field(["a", "b"]), "c", "enum"),
    (enum_field(["a", "b"]), "A", "enum"),
    (enum_field(["1", "2"]), 1, "type"),
    (enum_field(TITLED), "m", None),
    (enum_field(TITLED), "Medium", "oneOf"),  # the title is not the value
    (enum_field(TITLED), "x", "oneOf"),
    (enum_field(TITLED), 3, "type"),
    (enum_field(TITLED, legacy_names=True), "s", None),
    (enum_field(TITLED, legacy_names=True), "Small", "enum"),
    # multi selects
    (multi_select_field(["a", "b", "c"]), [], None),
    (multi_select_field(["a", "b", "c"]), ["c", "a"], None),
    (multi_select_field(["a", "b", "c"]), "a", "type"),
    (multi_select_field(["a", "b", "c"]), ("a",), "type"),
    (multi_select_field(["a", "b", "c"]), {"a": True}, "type"),
    (multi_select_field(["a", "b", "c"]), ["a", "a"], "uniqueItems"),
    (multi_select_field(["a", "b", "c"], min_items=1), [], "minItems"),
    (multi_select_field(["a", "b", "c"], max_items=2), ["a", "b", "c"], "maxItems"),
    (multi_select_field(TITLED), ["s"], None),
    (multi_select_field(TITLED, min_items=1, max_items=2), ["s", "m"], None),
]


@pytest.mark.parametrize(("prop", "value", "constraint"), CASES, ids=repr)
def test_field_values(prop: dict[str, Any], value: Any, constraint: str | None) -> None:
    result = validate_answer(one(prop), {"f": value})
    if constraint is None:
        assert result.ok, result.errors
        assert result.errors == ()
        assert result.content_with_defaults == {"f": value}
        assert result.content == result.content_with_defaults
    else:
        assert not result.ok
        assert result.content_with_defaults is None
        assert [(e.field, e.path, e.constraint) for e in result.errors] == [("f", "/f", constraint)]


@pytest.mark.parametrize(
    ("prop", "value", "path", "constraint"),
    [
        (multi_select_field(["a", "b"]), ["a", "z"], "/f/1", "enum"),
        (multi_select_field(["a", "b"]), ["a", 1], "/f/1", "type"),
        (multi_select_field(["a", "b"]), [None], "/f/0", "type"),
        (multi_select_field(TITLED), ["s", "Medium"], "/f/1", "anyOf"),
        (multi_select_field(TITLED), [["s"]], "/f/0", "type"),
    ],
)
def test_multi_select_items(prop: dict[str, Any], value: Any, path: str, constraint: str) -> None:
    assert errors_of(one(prop), {"f": value}) == [(path, constraint)]


def test_integral_floats_come_back_as_int() -> None:
    result = validate_answer(one(integer_field()), {"f": 30.0})
    assert result.content_with_defaults == {"f": 30}
    assert type(result.content_with_defaults["f"]) is int  # type: ignore[index]
    # numbers stay as they came
    result = validate_answer(one(number_field()), {"f": 88})
    assert type(result.content_with_defaults["f"]) is int  # type: ignore[index]


def test_bool_is_never_a_number() -> None:
    # Python's bool is an int subclass; JSON's true is not 1.
    for prop in (integer_field(), number_field(), integer_field(minimum=0, maximum=1)):
        for value in (True, False):
            result = validate_answer(one(prop), {"f": value})
            assert not result.ok
            (err,) = result.errors
            assert err.constraint == "type"
            assert err.actual_type == "boolean"


def test_type_error_hides_the_other_keywords() -> None:
    assert errors_of(one(string_field(min_length=5, format="email")), {"f": 1}) == [("/f", "type")]


def test_several_keyword_errors_on_one_value() -> None:
    schema = one(multi_select_field(["a", "b", "c"], max_items=1))
    assert errors_of(schema, {"f": ["a", "a"]}) == [("/f", "maxItems"), ("/f", "uniqueItems")]


@pytest.mark.parametrize("titled", [False, True], ids=["untitled", "titled"])
def test_a_repeated_choice_and_a_choice_that_is_not_an_option_are_both_reported(
    titled: bool,
) -> None:
    options: Any = TITLED if titled else ["s", "m", "l"]
    schema = one(multi_select_field(options, max_items=2))
    errors = errors_of(schema, {"f": ["s", "s", "xl"]})
    item = "anyOf" if titled else "enum"
    assert errors == [("/f", "maxItems"), ("/f", "uniqueItems"), ("/f/2", item)]


def test_text_too_long_and_not_an_email_gets_both_errors() -> None:
    schema = one(string_field(max_length=5, format="email"))
    assert errors_of(schema, {"f": "not an email"}) == [("/f", "maxLength"), ("/f", "format")]


# --------------------------------------------------------------------------------------------
# The object: required, extra keys, defaults
# --------------------------------------------------------------------------------------------

FORM = object_schema(
    {
        "name": string_field(min_length=1),
        "age": integer_field(minimum=0, default=30),
        "tags": multi_select_field(["x", "y"], default=["x"]),
        "ok": boolean_field(),
        "size": enum_field(TITLED, default="m"),
    },
    ["name", "ok"],
)


def test_missing_optional_fields_get_defaults_in_form_order() -> None:
    result = validate_answer(FORM, {"ok": True, "name": "Ann"})
    assert result.ok
    assert result.content_with_defaults == {
        "name": "Ann",
        "age": 30,
        "tags": ["x"],
        "ok": True,
        "size": "m",
    }
    assert list(result.content_with_defaults) == ["name", "age", "tags", "ok", "size"]  # type: ignore[arg-type]


def test_default_lists_are_fresh_copies() -> None:
    first = validate_answer(FORM, {"ok": True, "name": "A"}).content_with_defaults
    assert first is not None
    first["tags"].append("y")
    second = validate_answer(FORM, {"ok": True, "name": "A"}).content_with_defaults
    assert second is not None
    assert second["tags"] == ["x"]
    assert type(second["tags"]) is list


def test_given_values_win_over_defaults_and_optional_without_default_stays_absent() -> None:
    schema = object_schema({"a": integer_field(default=1), "b": string_field()})
    assert validate_answer(schema, {"a": 2}).content_with_defaults == {"a": 2}


def test_answer_is_not_mutated_and_not_aliased() -> None:
    answer = {"name": "Ann", "ok": False, "tags": ["y"]}
    result = validate_answer(FORM, answer)
    assert answer == {"name": "Ann", "ok": False, "tags": ["y"]}
    assert result.content_with_defaults is not None
    result.content_with_defaults["tags"].append("x")
    assert answer["tags"] == ["y"]


def test_required_fields() -> None:
    result = validate_answer(FORM, {})
    assert [(e.field, e.path, e.constraint, e.expected) for e in result.errors] == [
        ("name", "/name", "required", True),
        ("ok", "/ok", "required", True),
    ]
    assert result.errors[0].actual_type is None
    # a required field with a default still has to be answered
    schema = object_schema({"a": integer_field(default=1)}, ["a"])
    assert errors_of(schema, {}) == [("/a", "required")]


def test_extra_keys_are_an_error() -> None:
    result = validate_answer(FORM, {"name": "A", "ok": True, "nickname": "x", "other": 1})
    assert not result.ok
    (err,) = result.errors
    assert err.field is None
    assert err.constraint == "additionalProperties"
    assert err.path == ""
    assert err.actual_items == 2
    assert err.expected == ("name", "age", "tags", "ok", "size")
    assert "nickname" not in err.message


@pytest.mark.parametrize("content", [None, [], "{}", 1, True, [{"name": "A"}]])
def test_content_must_be_an_object(content: Any) -> None:
    result = validate_answer(FORM, content)
    assert not result.ok
    (err,) = result.errors
    assert (err.field, err.path, err.constraint, err.expected) == (None, "", "type", "object")
    assert err.actual_type == json_type(content)


def test_errors_follow_form_order_and_path_escaping() -> None:
    schema = object_schema({"b/x": integer_field(), "a~y": integer_field()}, ["a~y"])
    result = validate_answer(schema, {"b/x": "1", "zzz": 0})
    assert [(e.field, e.path, e.constraint) for e in result.errors] == [
        ("b/x", "/b~1x", "type"),
        ("a~y", "/a~0y", "required"),
        (None, "", "additionalProperties"),
    ]


# --------------------------------------------------------------------------------------------
# Errors never carry the value
# --------------------------------------------------------------------------------------------

SECRET = "sk-live-4f9aXSECRETx8823hunter2"
SECRET_FORM = object_schema(
    {
        "email": string_field(format="email"),
        "uri": string_field(format="uri"),
        "date": string_field(format="date"),
        "when": string_field(format="date-time"),
        "short": string_field(max_length=3),
        "long": string_field(min_length=100),
        "n": integer_field(),
        "x": number_field(),
        "b": boolean_field(),
        "pick": enum_field(["a", "b"]),
        "titled": enum_field(TITLED),
        "many": multi_select_field(["a", "b"], max_items=1),
        "tmany": multi_select_field(TITLED),
    },
    ["email"],
)


def test_no_error_field_or_summary_contains_the_submitted_value() -> None:
    answer: dict[str, Any] = {name: SECRET for name in SECRET_FORM["properties"]}
    answer["many"] = [SECRET, SECRET]
    answer["tmany"] = ["s", SECRET]
    answer[SECRET] = SECRET  # also as an unexpected key
    answer["nested"] = {SECRET: [SECRET]}
    result = validate_answer(SECRET_FORM, answer)
    assert not result.ok
    assert {e.field for e in result.errors} == {*SECRET_FORM["properties"], None}
    fragments = (SECRET, SECRET[:12], "hunter2", "SECRET")
    texts = [repr(result), str(result), summarize(result.errors)]
    for err in result.errors:
        texts.extend(str(getattr(err, f)) for f in AnswerError.__dataclass_fields__)
        texts.append(repr(err))
    for text in texts:
        for fragment in fragments:
            assert fragment not in text
    # only non-sensitive facts about the value
    by_field: dict[str | None, AnswerError] = {}
    for err in result.errors:  # the first error of each field
        by_field.setdefault(err.field, err)
    assert by_field["email"].actual_type == "string"
    assert by_field["email"].actual_length == len(SECRET)
    assert by_field["many"].actual_items == 2
    assert by_field["n"].message == "n: must be a whole number (got string)."


def test_secret_in_a_valid_looking_wrong_type_slot_is_not_echoed() -> None:
    result = validate_answer(one(integer_field()), {"f": f"{SECRET}36"})
    assert SECRET not in repr(result)


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def test_summarize() -> None:
    assert summarize(()) == "The answer is valid."
    result = validate_answer(
        object_schema(
            {
                "age": integer_field(minimum=18),
                "email": string_field(format="email"),
                "size": enum_field(TITLED),
            },
            ["email"],
        ),
        {"age": 12, "size": "xl"},
    )
    text = summarize(result.errors)
    assert text == (
        "The answer was not accepted (3 problems):\n"
        "- age: must be at least 18.\n"
        "- email: is required.\n"
        "- size: must be one of: Small (s), Medium (m)."
    )
    assert summarize(result.errors[:1]).startswith("The answer was not accepted (1 problem):")


def test_summarize_words_its_heading_in_the_locale_asked_for() -> None:
    assert summarize((), locale="pt-BR") == "A resposta é válida."
    result = validate_answer(object_schema({"age": integer_field(minimum=18)}), {"age": 12})
    assert summarize(result.errors, locale="pt-BR") == (
        "A resposta não foi aceita (1 problema):\n- age: must be at least 18."
    )
    twice = result.errors * 2
    assert summarize(twice, locale="pt-BR").startswith("A resposta não foi aceita (2 problemas):")
    with pytest.raises(ValueError, match="locale"):
        summarize(result.errors, locale="fr")


def test_messages_per_constraint() -> None:
    cases = [
        (string_field(min_length=2), "a", "f: must be at least 2 characters long (got 1)."),
        (string_field(max_length=1), "ab", "f: must be at most 1 character long (got 2)."),
        (string_field(format="date"), "x", "f: must be a date as YYYY-MM-DD."),
        (number_field(maximum=1.5), 2, "f: must be at most 1.5."),
        (number_field(minimum=2.0), 1, "f: must be at least 2."),
        (boolean_field(), "yes", "f: must be true or false (got string)."),
        (multi_select_field(["a"], min_items=1), [], "f: needs at least 1 choice (got 0)."),
        (
            multi_select_field(["a", "b"], max_items=1),
            ["a", "b"],
            "f: allows at most 1 choice (got 2).",
        ),
        (multi_select_field(["a"]), ["b"], "f: choice 0 must be one of: a."),
        (
            multi_select_field(["a"]),
            [1],
            "f: choice 0 must be one of the options, as text (got integer).",
        ),
        (number_field(), float("nan"), "f: must be a finite number."),
    ]
    for prop, value, message in cases:
        (err,) = validate_answer(one(prop), {"f": value}).errors
        assert err.message == message


def test_long_option_lists_are_shortened() -> None:
    opts = [f"o{i}" for i in range(25)]
    (err,) = validate_answer(one(enum_field(opts)), {"f": "zz"}).errors
    assert err.message.endswith("o9 and 15 more.")
    assert err.expected == tuple(opts)


def test_json_type_names() -> None:
    assert [json_type(v) for v in ("", 1, 1.0, True, None, [], {}, b"", object())] == [
        "string",
        "integer",
        "number",
        "boolean",
        "null",
        "array",
        "object",
        "unsupported",
        "unsupported",
    ]


# --------------------------------------------------------------------------------------------
# Conformance replies (the MCP conformance suite's elicitation scenarios)
# --------------------------------------------------------------------------------------------


def test_conformance_canned_replies_validate() -> None:
    assert validate_answer(
        TOOLS_CALL_ELICITATION, {"username": "testuser", "email": "test@example.com"}
    ).ok
    sep1034 = {
        "name": "Jane Smith",
        "age": 25,
        "score": 88,
        "status": "inactive",
        "verified": False,
    }
    assert validate_answer(SEP1034_DEFAULTS, sep1034).content_with_defaults == sep1034
    sep1330 = {
        "untitledSingle": "option1",
        "titledSingle": "value1",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value2"],
    }
    assert validate_answer(SEP1330_ENUMS, sep1330).ok
    assert validate_answer(SEP1034_DEFAULTS, {}).content_with_defaults == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }


def test_downlevelled_schema_validates_the_same_answers() -> None:
    old = downlevel(SEP1034_DEFAULTS, "2025-06-18")
    reply = {"name": "Jane", "age": 25, "score": 88.5, "status": "pending", "verified": False}
    assert validate_answer(old, reply).ok
    assert validate_answer(old, {}).content_with_defaults == {"verified": True}
    titled = object_schema({"size": enum_field(TITLED)})
    assert errors_of(downlevel(titled, "2025-06-18"), {"size": "Small"}) == [("/size", "enum")]


# --------------------------------------------------------------------------------------------
# Compilation and cache
# --------------------------------------------------------------------------------------------


def test_compile_is_cached_by_canonical_json() -> None:
    cache_clear()
    a = compile_validator(FORM)
    reordered = {"required": FORM["required"], "properties": FORM["properties"], "type": "object"}
    b = compile_validator(reordered)
    c = compile_validator(freeze(FORM))
    assert a is b is c
    assert cache_info() == CacheInfo(hits=2, misses=1, maxsize=256, currsize=1)
    assert a.field_names == ("name", "age", "tags", "ok", "size")
    assert a.required == frozenset({"name", "ok"})
    assert a.schema == FORM
    assert a.digest in repr(a) or a.digest[:12] in repr(a)
    cache_clear()
    assert cache_info().currsize == 0


def test_compile_refuses_disallowed_schemas_and_caches_nothing() -> None:
    cache_clear()
    with pytest.raises(SchemaNotAllowed):
        compile_validator(
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}
        )
    with pytest.raises(SchemaNotAllowed):
        validate_answer({"type": "object", "properties": {}}, {})
    assert cache_info().currsize == 0


@pytest.mark.parametrize(
    ("prop", "keyword"),
    [
        ({"type": "number", "minimum": float("nan")}, "minimum"),
        ({"type": "string", "enum": {"a", "b"}}, "enum"),
        ({"type": "string", "title": b"x"}, "title"),
    ],
)
def test_non_json_schemas_are_refused_with_a_location(prop: dict[str, Any], keyword: str) -> None:
    schema = {"type": "object", "properties": {"a": prop}}
    for candidate in (schema, freeze(schema)):
        with pytest.raises(SchemaNotAllowed) as info:
            compile_validator(candidate)
        assert (info.value.path, info.value.keyword) == ("/properties/a", keyword)


def test_compiled_validator_owns_a_frozen_copy() -> None:
    schema = object_schema({"a": string_field(max_length=2)})
    v = CompiledValidator(schema)
    schema["properties"]["a"]["maxLength"] = 100
    assert not v.validate({"a": "abc"}).ok
    assert validate_answer(v, {"a": "ab"}).ok


def test_a_checked_schema_is_compiled_as_it_is() -> None:
    checked = RequestedSchema(FORM)
    v = CompiledValidator(checked)
    assert v.schema is checked
    assert v.digest == checked.digest
    raw = CompiledValidator(FORM)  # a raw schema is checked, then held as a checked value
    assert (type(raw.schema), raw.schema) == (RequestedSchema, FORM)


def test_lru_bound_and_eviction() -> None:
    cache = ValidatorCache(maxsize=2)
    s1, s2, s3 = (one(integer_field(maximum=i)) for i in range(3))
    v1 = cache.get(s1)
    cache.get(s2)
    assert cache.get(s1) is v1  # s1 is now the most recent
    cache.get(s3)  # evicts s2
    assert cache.info() == CacheInfo(hits=1, misses=3, maxsize=2, currsize=2)
    assert cache.get(s1) is v1
    cache.get(s2)
    assert cache.info().misses == 4
    cache.clear()
    assert cache.info() == CacheInfo(0, 0, 2, 0)
    with pytest.raises(ValueError, match="maxsize"):
        ValidatorCache(maxsize=0)


def test_result_values_are_frozen() -> None:
    result = validate_answer(FORM, {})
    with pytest.raises(AttributeError):
        result.ok = True  # type: ignore[misc]
    with pytest.raises(AttributeError):
        result.errors[0].message = "x"  # type: ignore[misc]
    assert isinstance(result, ValidationResult)
    hash(result.errors[0])


# --------------------------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------------------------


def value_for(prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid values of one property of a random schema (see test_schema.requested_schemas)."""
    kind = field_kind(prop)
    if kind is FieldKind.STRING:
        if "format" in prop:
            return st.sampled_from(_SAMPLES[prop["format"]])
        lo = prop.get("minLength", 0)
        return st.text(min_size=lo, max_size=prop.get("maxLength", lo + 8))
    if kind is FieldKind.BOOLEAN:
        return st.booleans()
    if kind in (FieldKind.INTEGER, FieldKind.NUMBER):
        lo, hi = prop.get("minimum", -(10**6)), prop.get("maximum", 10**6)
        ints = st.integers(math.ceil(lo), math.floor(hi))
        if kind is FieldKind.INTEGER:
            return ints | ints.map(float)
        return ints | st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    opts = [v for v, _ in enum_options(prop)]
    if kind in (FieldKind.MULTI_SELECT, FieldKind.TITLED_MULTI_SELECT):
        lo = prop.get("minItems", 0)
        hi = min(prop.get("maxItems", len(opts)), len(opts))
        return st.tuples(st.permutations(opts), st.integers(lo, hi)).map(lambda t: t[0][: t[1]])
    return st.sampled_from(opts)


@st.composite
def valid_answers(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    answer = {}
    for name, prop in schema["properties"].items():
        if name in schema["required"] or draw(st.booleans()):
            answer[name] = draw(value_for(prop))
    return answer


_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(st.data())
def test_valid_answers_are_accepted_and_completed(data: st.DataObject) -> None:
    schema = data.draw(requested_schemas())
    answer = data.draw(valid_answers(schema))
    result = validate_answer(schema, answer)
    assert result.ok, result.errors
    out = result.content_with_defaults
    assert out is not None
    for name, prop in schema["properties"].items():
        if name in answer:
            assert out[name] == answer[name]
        elif "default" in prop:
            assert out[name] == prop["default"]
        else:
            assert name not in out


NOT_AN_OPTION = "\x00not-an-option"


def mutations(prop: dict[str, Any], required: bool) -> list[tuple[str, Any, str, set[str]]]:
    """(label, new value or a marker, sub-path, acceptable constraints) that make it invalid."""
    kind = field_kind(prop)
    out: list[tuple[str, Any, str, set[str]]] = []
    if required:
        out.append(("missing", "__missing__", "", {"required"}))
    wrong = {
        FieldKind.STRING: [36, True, None, ["x"]],
        FieldKind.INTEGER: ["36", True, 1.5, None],
        FieldKind.NUMBER: ["36", True, False, None, [1]],
        FieldKind.BOOLEAN: ["yes", "true", 1, 0, None],
        FieldKind.SINGLE_SELECT: [1, True, ["a"]],
        FieldKind.LEGACY_SINGLE_SELECT: [1, None],
        FieldKind.TITLED_SINGLE_SELECT: [1, {"const": "a"}],
        FieldKind.MULTI_SELECT: ["a", 1, {"a": 1}],
        FieldKind.TITLED_MULTI_SELECT: ["a", None],
    }[kind]
    out.extend(("wrong type", w, "", {"type"}) for w in wrong)
    if kind is FieldKind.STRING:
        if "maxLength" in prop and "format" not in prop:
            out.append(("too long", "x" * (prop["maxLength"] + 1), "", {"maxLength"}))
        if prop.get("minLength", 0) > 0 and "format" not in prop:
            out.append(("too short", "x" * (prop["minLength"] - 1), "", {"minLength"}))
        if "format" in prop:
            out.append(("bad format", "nope nope", "", {"format"}))
    if kind in (FieldKind.INTEGER, FieldKind.NUMBER):
        if "minimum" in prop:
            out.append(("below", prop["minimum"] - 1, "", {"minimum"}))
        if "maximum" in prop:
            out.append(("above", prop["maximum"] + 1, "", {"maximum"}))
        if kind is FieldKind.NUMBER:
            out.append(("nan", float("nan"), "", {"finite"}))
    opts = [v for v, _ in enum_options(prop)] if kind.value.endswith("select") else []
    if kind in (
        FieldKind.SINGLE_SELECT,
        FieldKind.LEGACY_SINGLE_SELECT,
        FieldKind.TITLED_SINGLE_SELECT,
    ):
        out.append(("not an option", NOT_AN_OPTION, "", {"enum", "oneOf"}))
    if kind in (FieldKind.MULTI_SELECT, FieldKind.TITLED_MULTI_SELECT):
        lo = prop.get("minItems", 0)
        if prop.get("maxItems", 99) >= 1:
            base = opts[: max(lo, 1) - 1] if lo > 0 else []
            out.append(
                ("bad item", [*base, NOT_AN_OPTION], f"/{len(base)}", {"enum", "anyOf", "minItems"})
            )
        out.append(("repeat", [opts[0], opts[0]], "", {"uniqueItems"}))
        if lo > 0:
            out.append(("too few", opts[: lo - 1], "", {"minItems"}))
        if prop.get("maxItems", 99) < len(opts):
            out.append(("too many", opts[: prop["maxItems"] + 1], "", {"maxItems"}))
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_answers_are_rejected_at_the_right_path(data: st.DataObject) -> None:
    schema = data.draw(requested_schemas())
    answer = data.draw(valid_answers(schema))
    name = data.draw(st.sampled_from(sorted(schema["properties"])))
    prop = schema["properties"][name]
    label, value, sub, constraints = data.draw(
        st.sampled_from(mutations(prop, name in schema["required"])), label="mutation"
    )
    if value == "__missing__":
        answer.pop(name, None)
    else:
        answer[name] = value
    result = validate_answer(schema, answer)
    assert not result.ok, label
    token = "/" + name.replace("~", "~0").replace("/", "~1")
    found = {(e.path, e.constraint) for e in result.errors if e.field == name}
    assert any((token + s, c) in found for c in constraints for s in (sub, "")), (label, found)
    for e in result.errors:
        assert e.field == name  # nothing else is blamed


@_SETTINGS
@given(st.data())
def test_extra_key_is_rejected(data: st.DataObject) -> None:
    schema = data.draw(requested_schemas())
    answer = data.draw(valid_answers(schema))
    extra = data.draw(st.text(min_size=1).filter(lambda k: k not in schema["properties"]))
    answer[extra] = data.draw(st.none() | st.integers() | st.text())
    assert errors_of(schema, answer) == [("", "additionalProperties")]


def _answer_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The wire schema as a whole-answer JSON Schema: no extra keys; a choice is made once."""
    out = thaw(schema)
    out["additionalProperties"] = False
    for prop in out["properties"].values():
        if prop["type"] == "array":
            prop["uniqueItems"] = True
    return out


_ORACLE_FORMATS = FormatChecker(formats=())
for _name, _check in FORMATS.items():
    _ORACLE_FORMATS.checks(_name)(lambda v, c=_check: not isinstance(v, str) or c(v))

_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_agrees_with_whole_schema_jsonschema(data: st.DataObject) -> None:
    """Our per-field split gives the same verdict as one Draft 2020-12 run on the whole schema."""
    schema = data.draw(requested_schemas())
    oracle = Draft202012Validator(_answer_schema(schema), format_checker=_ORACLE_FORMATS)
    answer = data.draw(valid_answers(schema))
    names = sorted(schema["properties"])
    for _ in range(data.draw(st.integers(0, 3))):
        name = data.draw(st.sampled_from([*names, "extra"]))
        prop = schema["properties"].get(name)
        choices = [_json_leaf, st.lists(_json_leaf, max_size=3)]
        if prop is not None:
            choices.append(value_for(prop))
            if "enum" in prop or "oneOf" in prop or "items" in prop:
                opts = [v for v, _ in enum_options(prop)]
                choices.append(st.lists(st.sampled_from(opts), max_size=len(opts) + 1))
        answer[name] = data.draw(st.one_of(choices))
        if data.draw(st.booleans()):
            answer.pop(name)
    ours = validate_answer(schema, answer)
    assert ours.ok == oracle.is_valid(answer), (ours.errors, list(oracle.iter_errors(answer)))
    bad_fields = {e.field for e in ours.errors}
    oracle_fields = {e.path[0] if e.path else None for e in oracle.iter_errors(answer)}
    # jsonschema reports "required" at the root; ours at the field
    if all(e.constraint != "required" for e in ours.errors):
        assert bad_fields == oracle_fields


def _oracle_places(oracle: Any, answer: dict[str, Any]) -> tuple[set[tuple[str, str]], set[str]]:
    """What the whole-schema jsonschema run finds: (JSON pointer, keyword) of every value
    error, and the names of the missing required fields."""
    places: set[tuple[str, str]] = set()
    missing: set[str] = set()
    for e in oracle.iter_errors(answer):
        if e.validator == "required" and not e.path:
            missing.update(n for n in e.validator_value if n not in answer)
        else:
            places.add((json_pointer(*e.path), str(e.validator)))
    return places, missing


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_violated_keyword_is_reported(data: st.DataObject) -> None:
    """Each keyword a value violates has its error -- not only the first one. The oracle is
    one jsonschema run over the whole answer; where a value (or a choice) has the wrong type,
    ours reports only that, and the oracle's other errors at that place are not asked for."""
    schema = data.draw(requested_schemas())
    oracle = Draft202012Validator(_answer_schema(schema), format_checker=_ORACLE_FORMATS)
    answer = data.draw(valid_answers(schema))
    for name in data.draw(st.lists(st.sampled_from(sorted(schema["properties"])), max_size=3)):
        prop = schema["properties"][name]
        choices = [_json_leaf, value_for(prop), st.text(max_size=12)]
        if "enum" in prop or "oneOf" in prop or "items" in prop:
            opts = [v for v, _ in enum_options(prop)]
            choices.append(
                st.lists(st.sampled_from([*opts, NOT_AN_OPTION, 7]), max_size=len(opts) + 2)
            )
        answer[name] = data.draw(st.one_of(choices))
    result = validate_answer(schema, answer)
    expected, missing = _oracle_places(oracle, answer)
    ours = {(e.path, e.constraint) for e in result.errors if e.constraint != "required"}
    assert {e.field for e in result.errors if e.constraint == "required"} == missing
    wrong_type = {path for path, c in ours if c == "type"}
    for path in wrong_type:
        assert any(p == path for p, _ in expected), (path, expected)
    expected = {(p, c) for p, c in expected if p not in wrong_type}
    assert ours == expected | {(p, "type") for p in wrong_type}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_violated_keyword_of_a_multi_select_is_reported(data: st.DataObject) -> None:
    """The same, aimed at multi-selects: too few or too many choices, a repeat, choices that
    are not options and choices that are not text, in any mix, each get their error."""
    opts = data.draw(st.lists(st.text("abcxyz", min_size=1, max_size=3), min_size=1, max_size=4,
                              unique=True))  # fmt: skip
    options: Any = {o: o.upper() for o in opts} if data.draw(st.booleans()) else opts
    low = data.draw(st.none() | st.integers(0, len(opts)))
    high = data.draw(st.none() | st.integers(low or 0, len(opts)))
    schema = one(multi_select_field(options, min_items=low, max_items=high))
    oracle = Draft202012Validator(_answer_schema(schema), format_checker=_ORACLE_FORMATS)
    choices = data.draw(st.lists(st.sampled_from([*opts, NOT_AN_OPTION, "zz", 7]), max_size=6))
    answer = {"f": choices}
    expected, _ = _oracle_places(oracle, answer)
    ours = set(errors_of(schema, answer))
    wrong_type = {path for path, c in ours if c == "type"}
    assert ours == {(p, c) for p, c in expected if p not in wrong_type} | {
        (p, "type") for p in wrong_type
    }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_no_error_ever_holds_a_submitted_secret(data: st.DataObject) -> None:
    """Over every error path of the validator, a secret put anywhere in the answer (a value,
    a choice, an unexpected key, inside a nested value) never reaches an error or summary."""
    schema = data.draw(requested_schemas())
    secret = "S3cr3t-" + data.draw(st.text("abcdefXYZ0123456789", min_size=8, max_size=12))
    carriers = st.one_of(
        st.just(secret),
        st.just(secret * 300),
        st.lists(st.sampled_from([secret, "a", 1]), min_size=1, max_size=4),
        st.dictionaries(st.just(secret), st.just(secret), min_size=1),
        st.text(max_size=3).map(lambda t: t + secret + t),
    )
    answer = data.draw(valid_answers(schema))
    for name in data.draw(st.lists(st.sampled_from(sorted(schema["properties"])), max_size=4)):
        answer[name] = data.draw(carriers)
    if data.draw(st.booleans()):
        answer[secret] = secret
    result = validate_answer(schema, answer)
    texts = [summarize(result.errors), repr(result.errors)]  # a valid answer holds its values
    for text in texts:
        assert secret not in text
        assert secret[:10] not in text


def test_any_mapping_is_validated_as_an_object() -> None:
    schema = object_schema(
        {"name": string_field(), "age": integer_field(minimum=0)}, ["name", "age"]
    )
    answer = {"name": "Ada", "age": 36.0}
    result = validate_answer(schema, OrderedDict(answer))
    assert result == validate_answer(schema, answer)
    assert result.ok
    assert result.content == {"name": "Ada", "age": 36}
    assert type(result.content["age"]) is int


def test_oracle_and_ours_differ_only_on_non_finite_numbers() -> None:
    """jsonschema accepts NaN for "number" (JSON has no NaN); we refuse it."""
    schema = one(number_field(minimum=0))
    oracle = Draft202012Validator(_answer_schema(schema), format_checker=_ORACLE_FORMATS)
    assert oracle.is_valid({"f": float("nan")})
    assert not validate_answer(schema, {"f": float("nan")}).ok


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_titled_or_untitled_select_refuses_titles(data: st.DataObject) -> None:
    opts = data.draw(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=4, unique=True))
    titles = {o: f"Title {o}!" for o in opts}
    schema = object_schema(
        {"one": enum_field(titles), "many": multi_select_field(titles)}, ["one", "many"]
    )
    assume(all(t not in opts for t in titles.values()))
    title = titles[opts[0]]
    assert errors_of(schema, {"one": title, "many": [opts[0]]}) == [("/one", "oneOf")]
    assert errors_of(schema, {"one": opts[0], "many": [title]}) == [("/many/0", "anyOf")]
