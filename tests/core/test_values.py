"""``fast_init``: the same instances, signature and errors as the dataclass ``__init__`` it
replaces, and still frozen."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.core import lifecycle, outcomes
from erlmcp_py.core.values import fast_init
from erlmcp_py.mcp import jsonrpc


def _make_pair() -> tuple[type[Any], type[Any]]:
    """The same class twice: plain dataclass, and with ``fast_init``."""

    def define() -> type[Any]:
        @dataclass(frozen=True, slots=True)
        class Point:
            x: int
            y: int = 3
            tags: list[int] = field(default_factory=list)
            label: str = field(default="p", kw_only=True)

            def __post_init__(self) -> None:
                if self.x < 0:
                    raise ValueError("x must be >= 0")

        return Point

    return define(), fast_init(define())


PLAIN, FAST = _make_pair()


def test_same_signature_as_the_dataclass_init() -> None:
    assert str(inspect.signature(FAST.__init__)) == str(inspect.signature(PLAIN.__init__))
    assert FAST.__init__.__qualname__ == PLAIN.__init__.__qualname__


def test_defaults_factory_kw_only_and_post_init() -> None:
    a, b = FAST(1), FAST(1)
    assert (a.x, a.y, a.tags, a.label) == (1, 3, [], "p")
    assert a.tags is not b.tags  # a fresh list each time, as default_factory gives
    c = FAST(2, 5, [7], label="q")
    assert (c.x, c.y, c.tags, c.label) == (2, 5, [7], "q")
    with pytest.raises(ValueError, match="x must be"):
        FAST(-1)


def test_still_frozen_equal_hashable_and_repr_unchanged() -> None:
    p = FAST(1, 2, label="z")
    with pytest.raises(FrozenInstanceError):
        p.x = 5
    assert p == FAST(1, 2, label="z")
    assert p != FAST(1, 3, label="z")
    assert repr(p) == repr(PLAIN(1, 2, label="z")).replace(PLAIN.__qualname__, FAST.__qualname__)
    assert not hasattr(p, "__dict__")
    fixed = FAST(1, 2, (), label="z")  # type: ignore[arg-type]
    assert hash(fixed) == hash(FAST(1, 2, (), label="z"))  # type: ignore[arg-type]


_ARGS = st.tuples(
    st.one_of(st.integers(-3, 3), st.none()),
    st.one_of(st.integers(), st.none(), st.just("oops")),
    st.one_of(st.lists(st.integers(), max_size=2), st.none()),
    st.one_of(st.text(max_size=3), st.none()),
    st.integers(0, 4),
)


def _call(cls: type[Any], args: tuple[Any, ...]) -> tuple[str, Any]:
    x, y, tags, label, shape = args
    positional = [v for v in (x, y, tags) if v is not None][: max(shape - 1, 0)]
    keywords = {} if label is None else {"label": label}
    if shape == 4:
        keywords["bogus"] = 1
    try:
        obj = cls(*positional, **keywords)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)
    return "ok", dataclasses.astuple(obj)


@given(_ARGS)
def test_behaves_like_the_dataclass_init(args: tuple[Any, ...]) -> None:
    assert _call(FAST, args) == _call(PLAIN, args)


def test_refuses_what_it_cannot_reproduce() -> None:
    @dataclass(slots=True)
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(frozen=True, slots=True)
    class WithInitVar:
        x: int
        scale: InitVar[int] = 1

    @dataclass(frozen=True, slots=True)
    class NotInInit:
        x: int
        y: int = field(default=0, init=False)

    for cls in (Mutable, NoSlots, WithInitVar, NotInInit):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)


def test_the_runtime_value_types_use_it() -> None:
    """The per-call messages, events and effects (the reason it exists)."""
    for cls in (
        jsonrpc.Request,
        jsonrpc.Response,
        lifecycle.Sent,
        lifecycle.Answer,
        lifecycle.Validated,
        lifecycle.Resolve,
        outcomes.Accepted,
    ):
        assert cls.__init__.__code__.co_filename == "<string>"
        assert "_set_" in " ".join(cls.__init__.__code__.co_names), cls


def test_copy_pickle_and_replace_still_work() -> None:
    """They go through __reduce__/__setstate__ and __init__: both must keep working."""
    import copy
    import pickle

    for value in (
        outcomes.Accepted({"a": 1}),
        outcomes.Failed("x"),
        lifecycle.Sent(1.0),
        jsonrpc.Request(1, "m", {"p": 1}),
    ):
        assert pickle.loads(pickle.dumps(value)) == value
        assert copy.copy(value) == value
        assert copy.deepcopy(value) == value
    assert dataclasses.replace(jsonrpc.Request(1, "m"), id=2) == jsonrpc.Request(2, "m")
    point = dataclasses.replace(FAST(1, label="a"), y=9)
    assert (point.x, point.y, point.label) == (1, 9, "a")
