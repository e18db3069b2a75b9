"""``state_token._normalize`` fast paths (exact leaf types, plain dicts) agree with the general
rules they skip, on everything a JSON decoder or an application can hand it."""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType
from typing import Any

from hypothesis import given, strategies as st

from erlmcp_py.core.state_token import _normalize


def general(value: Any) -> Any:
    """The rules without the fast paths (as ``_normalize`` was written before them)."""
    if type(value) is float:
        if value.is_integer():
            return int(value)
        return value
    if isinstance(value, Mapping):
        return {k: general(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [general(v) for v in value]
    return value


class Level(IntEnum):
    LOW = 1


leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.just(Level.LOW)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4).map(MappingProxyType)
    ),
    max_leaves=20,
)


def typed(value: Any) -> Any:
    """``value`` with the type of every node spelled out (``1 == 1.0 == True`` in Python)."""
    if isinstance(value, dict):
        return ("dict", {k: typed(v) for k, v in value.items()})
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


@given(values)
def test_normalize_fast_paths_agree_with_the_general_rules(value: Any) -> None:
    assert typed(_normalize(value)) == typed(general(value))


def test_leaves_come_back_as_they_are() -> None:
    for leaf in (None, True, 3, "x", Level.LOW):
        assert _normalize(leaf) is leaf
    assert type(_normalize(2.0)) is int
