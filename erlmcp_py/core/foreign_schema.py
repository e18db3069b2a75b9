"""Form schemas written by other MCP implementations, made ready for the MCP subset check.

A gateway asks its clients the questions of servers built on other SDKs. Their
``requestedSchema`` often carries JSON Schema *annotations* the MCP subset
(:mod:`~erlmcp_py.core.schema`) does not list, which say nothing about what the user may answer:
the official Python SDK renders every form from a pydantic model, and so puts the model's name
at the top (``"title": "Person"``); others add ``description``, ``$id``, ``$comment``,
``examples`` or ``additionalProperties``. Refusing such a schema would refuse nearly every
question of those servers, so :func:`read_foreign_schema` drops them and says which, and the
schema that remains is checked as strictly as any other.

``additionalProperties`` is dropped whatever its value: every MCP form is closed (an answer
carries only the form's fields, as :mod:`~erlmcp_py.core.validation` checks), so an answer
valid for the closed form is valid for an open one too. ``$schema`` is kept (the subset allows
it from 2025-11-25 on; :meth:`~erlmcp_py.core.schema.RequestedSchema.for_version` drops it for
2025-06-18). Everything else -- ``$ref``, ``$defs`` used by a property, nesting, ``pattern``,
an unknown keyword -- is left for the check to refuse by name.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from erlmcp_py.core.wording import json_pointer

__all__ = ["PROPERTY_ANNOTATIONS", "TOP_ANNOTATIONS", "ForeignSchema", "read_foreign_schema"]

#: Keywords at the top of a form schema that annotate it and constrain no answer.
TOP_ANNOTATIONS: Final = frozenset(
    {"title", "description", "$id", "$comment", "examples", "additionalProperties"}
)
#: Keywords of a property that annotate it and constrain no answer (``title`` and
#: ``description`` are in the MCP subset itself).
PROPERTY_ANNOTATIONS: Final = frozenset({"$comment", "examples"})


@dataclass(frozen=True, slots=True)
class ForeignSchema:
    """A foreign form schema without its annotations.

    Attributes:
        schema: What remains, for :class:`~erlmcp_py.core.schema.RequestedSchema` to check
            (the input as it was when it is not a JSON object with properties).
        dropped: JSON pointers of the annotations dropped, the top level's first, then each
            property's, in schema order (``"/title"``, ``"/properties/name/examples"``).
    """

    schema: Any
    dropped: tuple[str, ...] = ()


def read_foreign_schema(schema: object) -> ForeignSchema:
    """``schema`` with the annotations of :data:`TOP_ANNOTATIONS` and
    :data:`PROPERTY_ANNOTATIONS` dropped (see the module docstring).

    Args:
        schema: A ``requestedSchema`` as another implementation sent it (any JSON value).

    Returns:
        The schema to check and the pointers of what was dropped; nothing else is changed.
    """
    if not isinstance(schema, Mapping):
        return ForeignSchema(schema)
    dropped: list[str] = []
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in TOP_ANNOTATIONS:
            dropped.append(json_pointer(str(key)))
        else:
            out[key] = value
    props = out.get("properties")
    if isinstance(props, Mapping):
        cleaned: dict[Any, Any] = {}
        for name, prop in props.items():
            if isinstance(prop, Mapping):
                base = "/properties" + json_pointer(str(name))
                kept = {}
                for key, value in prop.items():
                    if key in PROPERTY_ANNOTATIONS:
                        dropped.append(base + json_pointer(str(key)))
                    else:
                        kept[key] = value
                prop = kept
            cleaned[name] = prop
        out["properties"] = cleaned
    return ForeignSchema(out, tuple(dropped))
