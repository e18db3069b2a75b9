"""CompiledValidator's generated path for a full plain-dict answer must give exactly what the
general path gives (it returns ``None`` to defer), for any schema and any answer."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from erlmcp_py.core.schema import (
    boolean_field,
    enum_field,
    integer_field,
    multi_select_field,
    number_field,
    object_schema,
    string_field,
)
from erlmcp_py.core.validation import ValidationResult, compile_validator
from tests.core.test_schema import requested_schemas
from tests.core.test_validation import _json_leaf, mutations, value_for


def _typed(value: Any) -> Any:
    """A value with the type of every part (so that 1 != 1.0 != True)."""
    if isinstance(value, dict):
        return [(k, _typed(v)) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return (type(value), [_typed(v) for v in value])
    return (type(value), value)


def _same(a: ValidationResult, b: ValidationResult) -> bool:
    return (a.ok, _typed(a.content_with_defaults), a.errors) == (
        b.ok,
        _typed(b.content_with_defaults),
        b.errors,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requested_schemas(), st.data())
def test_generated_and_general_paths_agree(schema: dict[str, Any], data: st.DataObject) -> None:
    compiled = compile_validator(schema)
    props = schema["properties"]
    answer: dict[str, Any] = {name: data.draw(value_for(prop)) for name, prop in props.items()}
    # then break it, or not: wrong values, edge values, a missing or an extra key
    for _ in range(data.draw(st.integers(0, 2))):
        name = data.draw(st.sampled_from(sorted(props)))
        edge = [v for _, v, _, _ in mutations(props[name], False) if v != "__missing__"]
        choices: list[st.SearchStrategy[Any]] = [_json_leaf, st.lists(_json_leaf, max_size=3)]
        if edge:
            choices.append(st.sampled_from(edge))
        answer[name] = data.draw(st.one_of(choices))
    shape = data.draw(st.sampled_from(["as is", "missing", "extra", "ordered", "swap"]))
    if shape == "missing":
        answer.pop(data.draw(st.sampled_from(sorted(answer))))
    elif shape == "extra":
        answer[data.draw(st.text(min_size=1).filter(lambda k: k not in props))] = 1
    elif shape == "swap":  # the same number of keys, one of them not a field
        answer.pop(data.draw(st.sampled_from(sorted(answer))))
        answer[data.draw(st.text(min_size=1).filter(lambda k: k not in props))] = 1
    content: Any = OrderedDict(answer) if shape == "ordered" else answer
    assert _same(compiled.validate(content), compiled._validate(content))


_edges = st.sampled_from([-1, 0, 1, 149, 150, 151])
_ages = _edges | _edges.map(float) | st.integers(-5, 200) | st.booleans() | st.none()
_texts = st.text(max_size=3) | st.integers() | st.none() | st.booleans()


@settings(max_examples=300, deadline=None)
@given(
    _ages,
    _texts,
    _texts,
    st.booleans() | st.integers(0, 1),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4),
    st.floats(allow_nan=True, allow_infinity=True) | st.integers(-20, 20),
)
def test_each_inlined_kind_agrees(
    age: Any, name: Any, short: Any, flag: Any, picks: Any, x: Any
) -> None:
    schema = object_schema(
        {
            "name": string_field(),
            "age": integer_field(minimum=0, maximum=150),
            "n": integer_field(),
            "flag": boolean_field(),
            "picks": multi_select_field(["a", "b", "c"], max_items=2),
            "x": number_field(minimum=-10, maximum=10),
            "short": string_field(max_length=2),
            "pick": enum_field(["p", "q"]),
        },
        ["name"],
    )
    compiled = compile_validator(schema)
    answer = {
        "name": name,
        "age": age,
        "n": age,
        "flag": flag,
        "picks": picks,
        "x": x,
        "short": short,
        "pick": "p",
    }
    assert _same(compiled.validate(answer), compiled._validate(answer))


def test_the_common_answer_takes_the_generated_path() -> None:
    schema = object_schema(
        {
            "name": string_field(),
            "age": integer_field(minimum=0, maximum=150),
            "subscribe": boolean_field(default=False),
            "picks": multi_select_field(["a", "b"]),
        },
        ["name", "age"],
    )
    compiled = compile_validator(schema)
    answer = {"name": "Ada", "age": 36, "subscribe": True, "picks": ["a"]}
    out = compiled._full(answer)
    assert out == answer
    assert out is not None
    assert out["picks"] is not answer["picks"]  # a copy, as the general path stores it
    assert compiled._full({**answer, "age": 36.0}) is None  # stored as an int: general path
    assert compiled._full({**answer, "age": 151}) is None
    assert compiled._full({"name": "Ada", "age": 36, "subscribe": True}) is None
