"""The required arguments a ``tools/call`` lacks, and the form that asks the user for them.

A tool's ``inputSchema`` (from the server's ``tools/list``) names its ``required`` arguments.
When a call leaves some out, :func:`missing_arguments` says which, in the schema's order, and
builds the ``requestedSchema`` that asks for exactly those: each missing argument's own
property schema, without the annotations that constrain nothing
(:data:`~erlmcp_py.core.foreign_schema.PROPERTY_ANNOTATIONS`), all of them required. The form
must be in the MCP form subset (:func:`~erlmcp_py.core.schema.check_requested_schema`: string,
number, integer, boolean and enum properties with their constraints); when one of them is not
(an object, an array of objects, a ``pattern``, a ``$ref``, an ``anyOf``, a property the schema
does not describe), there is no form: :attr:`MissingArguments.unaskable` says which and why,
and the call is left to the server, whose own error is the honest answer.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.foreign_schema import PROPERTY_ANNOTATIONS
from erlmcp_py.core.schema import LATEST_VERSION, check_requested_schema
from erlmcp_py.core.wording import json_pointer

__all__ = ["MissingArguments", "missing_arguments"]


@dataclass(frozen=True, slots=True)
class MissingArguments:
    """The required arguments a call lacks.

    Attributes:
        names: The missing arguments, in the order of the schema's ``required``.
        form: The ``requestedSchema`` asking for them (checked against the newest form
            subset), or ``None`` when one of them cannot be asked in a form.
        unaskable: Why there is no form (the argument, the keyword and where), else ``""``.
    """

    names: tuple[str, ...]
    form: dict[str, Any] | None
    unaskable: str = ""


def missing_arguments(input_schema: object, arguments: object) -> MissingArguments | None:
    """The required arguments of ``input_schema`` that ``arguments`` lacks, and their form.

    Args:
        input_schema: A tool's ``inputSchema`` as its server listed it (any JSON value).
        arguments: The call's ``arguments`` (absent is ``None``: no arguments at all).

    Returns:
        ``None`` when nothing required is missing -- or nothing can be said: the schema is
        not an object schema with a ``required`` list of names, or ``arguments`` is not an
        object (the server answers that itself).
    """
    if not isinstance(input_schema, Mapping):
        return None
    required = input_schema.get("required")
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        return None
    given = arguments if arguments is not None else {}
    if not isinstance(given, Mapping):
        return None
    names = tuple(dict.fromkeys(n for n in required if n not in given))
    if not names:
        return None
    props = input_schema.get("properties")
    properties: dict[str, Any] = {}
    for name in names:
        prop = props.get(name) if isinstance(props, Mapping) else None
        if not isinstance(prop, Mapping):
            where = "/properties" + json_pointer(name)
            return MissingArguments(
                names, None, f"{name}: the schema does not describe it ({where})"
            )
        properties[name] = {k: v for k, v in prop.items() if k not in PROPERTY_ANNOTATIONS}
    form = {"type": "object", "properties": properties, "required": list(names)}
    try:
        check_requested_schema(form, LATEST_VERSION)
    except SchemaNotAllowed as exc:
        detail = f" ({exc.detail})" if exc.detail else ""
        return MissingArguments(names, None, f"{exc.keyword!r} at {exc.path or '/'}{detail}")
    return MissingArguments(names, form)
