"""The MCP ``requestedSchema`` subset, per protocol version: checks, builders, down-levelling.

Theory of operation
-------------------
A form-mode ``elicitation/create`` carries a ``requestedSchema``: a *flat* JSON object schema
whose properties are primitives (``PrimitiveSchemaDefinition`` in the spec's ``schema.ts``).
What is allowed depends on the negotiated protocol version:

=====================  ===========================================  ==========================
property kind          keywords (besides ``type``)                  versions
=====================  ===========================================  ==========================
string                 title description minLength maxLength        all
                       format(email|uri|date|date-time) [default]
number / integer       title description minimum maximum [default]  all
boolean                title description default                    all
untitled single-select title description enum [default]             all
legacy titled select   title description enum enumNames [default]   all
titled single-select   title description oneOf[{const,title}]       2025-11-25+
                       default
untitled multi-select  title description minItems maxItems          2025-11-25+
                       items{type:string,enum} default
titled multi-select    title description minItems maxItems          2025-11-25+
                       items{anyOf[{const,title}]} default
=====================  ===========================================  ==========================

``[default]``: only from 2025-11-25 on (SEP-1034); 2025-06-18 allows ``default`` on booleans
only. The top level is ``{"type": "object", "properties": {...}, "required": [...]}`` plus an
optional ``$schema`` string from 2025-11-25 on. 2026-07-28 has the 2025-11-25 subset.

:func:`check_requested_schema` is a whitelist walk: anything not in the table -- an unknown
keyword, ``$ref``, ``pattern``, nesting, a keyword value of the wrong JSON type, a ``required``
entry naming no property, a ``default`` that fails its own field, an empty form, a schema
larger than 64 KiB -- raises :class:`~erlmcp_py.core.errors.SchemaNotAllowed` with a JSON
pointer to the schema object that holds the offending keyword.

:func:`downlevel` turns a schema written in the newest dialect into what a given version's
client understands (2025-06-18: defaults stay only on booleans, titled single-selects become
``enum`` + ``enumNames``; multi-selects cannot be expressed and are refused).

:class:`RequestedSchema` is a checked schema as a value: its constructor *is* the check, so
a ``RequestedSchema`` holds a schema of its version's subset, frozen, with its encoded size
(measured by the check). Every way of asking builds one once (a type's form, a form
definition, a field helper) and the runtime takes it as it is; a raw schema dict from a
caller becomes one where it enters the runtime (:func:`checked_schema`), checked then.
:meth:`RequestedSchema.for_version` is the down-levelled schema for an older client.

The builders (:func:`string_field` ... :func:`object_schema`) return plain, checked ``dict``
objects. :func:`freeze` turns a schema into an immutable :class:`FrozenDict` that remembers its
canonical digest, which lets the validator cache find it in well under a microsecond.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

from erlmcp_py.core.schema._builders import (
    boolean_field,
    enum_field,
    integer_field,
    multi_select_field,
    number_field,
    object_schema,
    string_field,
)
from erlmcp_py.core.schema._checked import RequestedSchema, checked_schema, downlevel
from erlmcp_py.core.schema._formats import FORMATS, check_format
from erlmcp_py.core.schema._frozen import (
    FrozenDict,
    FrozenList,
    canonical_json,
    freeze,
    schema_digest,
    thaw,
)
from erlmcp_py.core.schema._kinds import FieldKind, enum_options, field_kind
from erlmcp_py.core.schema._walk import MAX_SCHEMA_BYTES, check_requested_schema

__all__ = [
    "FORMATS",
    "MAX_SCHEMA_BYTES",
    "FieldKind",
    "FrozenDict",
    "FrozenList",
    "RequestedSchema",
    "boolean_field",
    "canonical_json",
    "check_format",
    "check_requested_schema",
    "checked_schema",
    "downlevel",
    "enum_field",
    "enum_options",
    "field_kind",
    "freeze",
    "integer_field",
    "multi_select_field",
    "number_field",
    "object_schema",
    "schema_digest",
    "string_field",
    "thaw",
]
