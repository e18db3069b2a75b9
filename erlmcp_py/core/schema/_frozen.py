"""Frozen schemas (:class:`FrozenDict`, :class:`FrozenList`) and their canonical digest.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NoReturn

__all__ = [
    "FrozenDict",
    "FrozenList",
    "canonical_json",
    "freeze",
    "schema_digest",
    "thaw",
]


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable; thaw() it to get a mutable copy")


class FrozenDict(dict[str, Any]):
    """An immutable ``dict`` (deeply: nested dicts and lists are frozen too).

    It is still a ``dict``, so it encodes to JSON and compares equal to plain dicts. It
    remembers its canonical digest, so validators keyed by digest are found without
    re-encoding the schema. Build one with :func:`freeze`.
    """

    __slots__ = ("_digest",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._digest: str | None = None

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    @property
    def digest(self) -> str:
        """The hex SHA-256 of :func:`canonical_json` of this schema (computed once)."""
        if self._digest is None:
            self._digest = _digest_of(self)
        return self._digest

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (freeze, (thaw(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class FrozenList(list[Any]):
    """An immutable ``list``; see :class:`FrozenDict`."""

    __slots__ = ()

    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    clear = _immutable
    extend = _immutable
    insert = _immutable
    pop = _immutable
    remove = _immutable
    reverse = _immutable
    sort = _immutable

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (freeze, (thaw(self),))

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"


def freeze(value: Any) -> Any:
    """Return a deeply immutable copy of a JSON value (dicts -> :class:`FrozenDict`, lists and
    tuples -> :class:`FrozenList`); scalars are returned as they are. Frozen input is returned
    unchanged."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, Mapping):
        out = FrozenDict()
        for k, v in value.items():
            dict.__setitem__(out, k, freeze(v))
        return out
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Return a deep, mutable copy of a JSON value (the inverse of :func:`freeze`)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """Encode a JSON value canonically: sorted keys, no whitespace, UTF-8 text, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _digest_of(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def schema_digest(schema: Mapping[str, Any]) -> str:
    """The hex SHA-256 of the canonical JSON of ``schema`` (cached on a :class:`FrozenDict`)."""
    if isinstance(schema, FrozenDict):
        return schema.digest
    return _digest_of(schema)
