"""Checked schemas as values (:class:`RequestedSchema`) and down-levelling for older clients.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.schema._frozen import FrozenDict, freeze, thaw
from erlmcp_py.core.schema._kinds import _MULTI, FieldKind, _classify
from erlmcp_py.core.schema._walk import _check, _check_version, _pointer
from erlmcp_py.core.versions import (
    LATEST_VERSION,
    V_2025_06_18,
    V_2025_11_25,
    V_2026_07_28,
)

__all__ = [
    "RequestedSchema",
    "checked_schema",
    "downlevel",
]


#: The subsets, as ranks: a schema of a version's subset is in every subset of equal or higher
#: rank (2025-11-25 and 2026-07-28 share one).
_SUBSET_RANK: Final[Mapping[str, int]] = {V_2025_06_18: 0, V_2025_11_25: 1, V_2026_07_28: 1}


class RequestedSchema(FrozenDict):
    """A ``requestedSchema`` checked for one protocol version's subset (frozen).

    The constructor is the check (:func:`check_requested_schema`): a ``RequestedSchema`` exists
    only for a schema the check accepted, so whoever holds one sends it as it is. It is a
    :class:`FrozenDict`, so it encodes to JSON, compares equal to plain dicts and carries its
    canonical digest.

    Attributes:
        version: The protocol version it was checked for.
        size: Bytes of its compact UTF-8 JSON encoding (measured by the check).
    """

    __slots__ = ("size", "version")

    def __init__(self, schema: Mapping[str, Any], version: str = LATEST_VERSION) -> None:
        """Check ``schema`` for ``version`` and freeze it.

        Raises:
            SchemaNotAllowed: as :func:`check_requested_schema`.
            ValueError: ``version`` is not a version with form elicitation.
        """
        size = _check(schema, version)
        super().__init__()
        for key, value in schema.items():
            dict.__setitem__(self, key, freeze(value))
        self.size = size
        self.version = version

    def allowed_in(self, version: str) -> bool:
        """Whether a ``version`` client must understand this schema as it is (its subset holds
        this schema's version's subset).

        Raises:
            ValueError: ``version`` is not a version with form elicitation.
        """
        rank = _SUBSET_RANK.get(version)
        if rank is None:
            _check_version(version)
        return _SUBSET_RANK[self.version] <= _SUBSET_RANK[version]

    def for_version(self, version: str) -> RequestedSchema:
        """This schema as the ``version`` client must receive it: itself when it is allowed
        there; for 2025-06-18, ``$schema`` dropped, ``default`` kept on booleans only, titled
        single-selects (``oneOf``) as ``enum`` + ``enumNames``.

        Raises:
            SchemaNotAllowed: a multi-select has no 2025-06-18 form (keyword ``"type"`` at the
                property, ``inexpressible_in`` the version).
            ValueError: unknown ``version``.
        """
        if self.allowed_in(version):
            return self
        out: dict[str, Any] = thaw(self)
        out.pop("$schema", None)
        props: dict[str, Any] = out["properties"]
        for name, prop in props.items():
            path = _pointer("/properties", name)
            kind = _classify(prop, path)
            if kind in _MULTI:
                raise SchemaNotAllowed(
                    path, "type", "2025-06-18 has no multi-select", inexpressible_in=version
                )
            if kind is not FieldKind.BOOLEAN:
                prop.pop("default", None)
            if kind is FieldKind.TITLED_SINGLE_SELECT:
                options = prop.pop("oneOf")
                prop["enum"] = [o["const"] for o in options]
                prop["enumNames"] = [o["title"] for o in options]
        return RequestedSchema(out, version)

    def __reduce__(self) -> tuple[Any, ...]:
        return (RequestedSchema, (thaw(self), self.version))

    def __repr__(self) -> str:
        return f"RequestedSchema({dict.__repr__(self)}, {self.version!r})"


def checked_schema(schema: Mapping[str, Any], version: str) -> RequestedSchema:
    """``schema`` as a :class:`RequestedSchema` a ``version`` client must understand.

    A ``RequestedSchema`` allowed in ``version`` is returned as it is; any other schema (a raw
    dict from a caller, or one checked for a newer subset) is checked for ``version`` now.

    Raises:
        SchemaNotAllowed: as :func:`check_requested_schema`.
        ValueError: ``version`` is not a version with form elicitation.
    """
    if isinstance(schema, RequestedSchema) and schema.allowed_in(version):
        return schema
    return RequestedSchema(schema, version)


def downlevel(schema: Mapping[str, Any], version: str) -> dict[str, Any]:
    """Return ``schema`` (newest dialect) as the ``version`` client must receive it.

    For 2025-11-25 and 2026-07-28 this is a checked copy. For 2025-06-18: ``$schema`` is
    dropped, ``default`` is kept on booleans only, titled single-selects (``oneOf``) become
    ``enum`` + ``enumNames``. Multi-selects have no 2025-06-18 form and are refused.
    (:meth:`RequestedSchema.for_version` does the same without the mutable copy.)

    Args:
        schema: A requestedSchema accepted by :func:`check_requested_schema` at
            :data:`LATEST_VERSION`.
        version: The client's negotiated protocol version.

    Returns:
        A new, mutable schema accepted by ``check_requested_schema(result, version)``.

    Raises:
        SchemaNotAllowed: ``schema`` is not allowed, or cannot be expressed for ``version``
            (keyword ``"type"`` at a multi-select property).
        ValueError: unknown ``version``.
    """
    _check_version(version)
    out: dict[str, Any] = thaw(checked_schema(schema, LATEST_VERSION).for_version(version))
    return out
