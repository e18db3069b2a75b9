"""Frozen, slotted value types (DESIGN §7) that are cheap to build.

A ``@dataclass(frozen=True, slots=True)`` instance is immutable because the class's
``__setattr__`` raises; so the generated ``__init__`` stores each field through
``object.__setattr__(self, "name", value)`` — a generic, name-looked-up call per field that
makes building one about three times as slow as building a plain slotted object. The runtime
builds some twenty messages, events and effects per elicitation, which made those calls
about a tenth of an in-process tool call's instructions.

:func:`fast_init` keeps everything the dataclass decorator made (frozen ``__setattr__``,
``__eq__``, ``__hash__``, ``__repr__``, ``__match_args__``, slots) and replaces only
``__init__`` by one that stores each field through its slot's own descriptor, which needs no
lookup. Same signature, same defaults, same ``__post_init__`` call.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

__all__ = ["fast_init"]

T = TypeVar("T")


class _Factory:
    """The default of a ``default_factory`` parameter (shown as dataclasses shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def fast_init(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass a faster ``__init__`` (apply on top of ``@dataclass``).

    Example:
        >>> @fast_init
        ... @dataclass(frozen=True, slots=True)
        ... class Point:
        ...     x: int
        ...     y: int = 0

    Raises:
        TypeError: ``cls`` is not a frozen dataclass with slots, or it has a field that is not
            an ``__init__`` parameter (``init=False``), or an ``InitVar``.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__qualname__}: fast_init needs @dataclass(frozen=True, slots=True)")
    env: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            raise TypeError(f"{cls.__qualname__}.{f.name}: fast_init needs init=True fields")
        name = f.name
        env[f"_set_{name}"] = cls.__dict__[name].__set__  # the slot's member descriptor
        if f.default is not dataclasses.MISSING:
            env[f"_default_{name}"] = f.default
            param = f"{name}=_default_{name}"
            value = name
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{name}"] = f.default_factory
            param = f"{name}=_FACTORY"
            value = f"_factory_{name}() if {name} is _FACTORY else {name}"
        else:
            param = name
            value = name
        (keyword if f.kw_only else positional).append(param)
        body.append(f"    _set_{name}(self, {value})")
    generated = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    if list(inspect.signature(cls.__init__).parameters)[1:] != generated:
        raise TypeError(f"{cls.__qualname__}: fast_init does not support InitVar")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    # Generated like dataclasses' own __init__: the signature and defaults must be exact.
    exec(source, env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)  # for inspect and typing
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
