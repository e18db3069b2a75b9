"""FormType.from_valid's direct path (a validated answer of a pydantic model form goes to the
model as it is) must build exactly what the general per-field loop builds."""

# ruff: noqa: UP045

from __future__ import annotations

import copy
import json
from typing import Annotated, Any, Optional

import annotated_types as at
import pydantic
from hypothesis import HealthCheck, given, settings, strategies as st

from erlmcp_py.core.typeschema import FormType, schema_for
from tests.core.test_typeschema import models_and_values


def _general(form: FormType[Any]) -> FormType[Any]:
    """The same form with the direct path off: from_valid runs its per-field loop."""
    general = copy.copy(form)
    general._direct_keys = None
    return general


def _facts(value: Any) -> list[tuple[str, type, Any]]:
    return [(k, type(v), v) for k, v in vars(value).items()]


class Person(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0, le=150)
    subscribe: bool = False


class WithDefaults(pydantic.BaseModel):
    count: int = 3
    note: Optional[str] = None
    level: Annotated[int, at.Ge(1)] = 1


class Aliased(pydantic.BaseModel):
    user_name: str = pydantic.Field(alias="userName")


class Floaty(pydantic.BaseModel):
    ratio: float


def test_direct_path_is_taken_only_where_it_is_exact() -> None:
    assert schema_for(Person)._direct_keys == frozenset({"name", "age", "subscribe"})
    assert schema_for(WithDefaults)._direct_keys is not None
    assert schema_for(Aliased)._direct_keys is None  # renamed: the loop maps the names
    assert schema_for(Floaty)._direct_keys is None  # float(): an int answer becomes a float


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models_and_values(), st.data())
def test_direct_and_general_from_valid_agree(case: tuple[str, list[Any]], data: Any) -> None:
    _, fields = case
    annotations = {name: (Optional[ann] if opt else ann) for name, ann, _, _, opt in fields}
    definitions: dict[str, Any] = {k: (a, ...) for k, a in annotations.items()}
    tp: Any = pydantic.create_model("Random", **definitions)
    form = schema_for(tp)
    answer = {name: to_wire(v) for name, _, v, to_wire, _ in fields if v is not None}
    wire = json.loads(json.dumps(answer))
    for key, value in wire.items():  # integral floats for integer fields, as JSON allows
        if type(value) is int and abs(value) < 2**53 and data.draw(st.booleans()):
            wire[key] = float(value)
    result = form.validate(wire)
    assert result.ok, result.errors
    content = result.content_with_defaults
    assert content is not None
    direct = form.from_valid(dict(content))
    general = _general(form).from_valid(dict(content))
    assert _facts(direct) == _facts(general)


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "count": st.integers(-5, 5) | st.integers(-5, 5).map(float),
            "note": st.none() | st.text(max_size=3),
            "level": st.integers(1, 9) | st.integers(1, 9).map(float),
        },
    )
)
def test_defaults_and_optional_fields_agree(answer: dict[str, Any]) -> None:
    form = schema_for(WithDefaults)
    result = form.validate({k: v for k, v in answer.items() if v is not None})
    assert result.ok, result.errors
    assert result.content_with_defaults is not None
    direct = form.from_valid(result.content_with_defaults)
    general = _general(form).from_valid(result.content_with_defaults)
    assert _facts(direct) == _facts(general)
