"""``ToolSpec.bind``'s shortcut for a tool without parameters (it reads the model's field
dict instead of the cached ``argument_names``): pinned against ``bind`` as it was written
before, for tools with and without parameters, valid and invalid arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, strategies as st
from pydantic import ValidationError

from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.tools import ToolArgumentsError, ToolSpec, make_tool


async def nothing() -> str:
    return ""


async def only_context(ctx: Context) -> str:
    return ""


async def one(a: int) -> str:
    return ""


async def with_default(ctx: Context, a: int, b: str = "x") -> str:
    return ""


SPECS = [make_tool(fn, context_type=Context) for fn in (nothing, only_context, one, with_default)]


def reference_bind(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """``bind`` before the shortcut."""
    names = spec.argument_names
    if not names:
        return {}
    try:
        model = spec.arguments_model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)
        )
        raise ToolArgumentsError(f"Invalid arguments for tool {spec.name!r}: {problems}") from None
    return {name: getattr(model, name) for name in names}


def outcome(bind: Any, spec: ToolSpec, arguments: Any) -> Any:
    try:
        return ("ok", bind(spec, arguments))
    except ToolArgumentsError as exc:
        return ("error", str(exc))


_values = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.booleans())
_arguments = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(["a", "b", "c", "ctx"]), _values, max_size=3)
)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@given(arguments=_arguments)
def test_bind_agrees_with_the_general_path(spec: ToolSpec, arguments: Any) -> None:
    assert outcome(ToolSpec.bind, spec, arguments) == outcome(reference_bind, spec, arguments)


def test_the_shortcut_and_argument_names_see_the_same_parameters() -> None:
    for spec in SPECS:
        assert bool(spec.arguments_model.__pydantic_fields__) == bool(spec.argument_names)
    assert [bool(s.argument_names) for s in SPECS] == [False, False, True, True]
