"""The form definition language: eight field types -> requestedSchema + answer validation.

A form is declared as data (:func:`load_form` reads a mapping; :class:`FormDefinition` is the
model), compiled once by :func:`compile_form` into a :class:`CompiledForm` (the wire
``requestedSchema`` per protocol version and the server-side JSON Schema 2020-12), and an
accepted answer is checked by :func:`validate_form_answer`. ``docs/architecture.md`` says how
this relates to :mod:`~erlmcp_py.core.schema`, :mod:`~erlmcp_py.core.typeschema` and
:mod:`~erlmcp_py.core.validation`.

Each job lives in its own private module:

* ``_base`` -- pydantic config and constrained scalars of the models;
* ``_conditions`` -- conditions: the language, visibility order, the fields an answer shows;
* ``_fields`` -- the eight field types and their rules;
* ``_pattern`` -- ECMA-262 ``pattern`` strings, checked and translated to Python ``re``;
* ``_definition`` -- the whole form, its cross-field checks, :func:`load_form`;
* ``_sensitive`` -- fields that force URL mode (sensitive data);
* ``_wire`` -- the wire ``requestedSchema`` per protocol version;
* ``_jsonschema`` -- the server-side JSON Schema 2020-12;
* ``_compile`` -- :func:`compile_form` and :class:`CompiledForm`;
* ``_messages`` -- wording of :class:`~erlmcp_py.core.validation.AnswerError` values;
* ``_extra_checks`` -- the checks JSON Schema cannot express;
* ``_answers`` -- :func:`validate_form_answer`.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

from erlmcp_py.core.forms._answers import validate_form_answer
from erlmcp_py.core.forms._base import (
    FieldId,
    NonNegative,
    Number,
    Positive,
    Scalar,
)
from erlmcp_py.core.forms._compile import CompiledForm, compile_form
from erlmcp_py.core.forms._conditions import (
    Condition,
    ConditionOperator,
    visible_fields,
)
from erlmcp_py.core.forms._definition import (
    CrossFieldRule,
    Dependency,
    FormDefinition,
    FormValidation,
    load_form,
)
from erlmcp_py.core.forms._fields import (
    FIELD_TYPES,
    AnyField,
    BooleanField,
    BooleanValidation,
    DateField,
    DateValidation,
    DisplayStyle,
    FieldDefinition,
    FileField,
    FileValidation,
    InputType,
    MultiSelectField,
    MultiSelectValidation,
    NumberField,
    NumberValidation,
    Option,
    Rendering,
    SelectField,
    SelectValidation,
    TextField,
    TextFormat,
    TextValidation,
    UrlField,
    UrlValidation,
)
from erlmcp_py.core.forms._sensitive import sensitive_name, sensitive_reason

__all__ = [
    "FIELD_TYPES",
    "AnyField",
    "BooleanField",
    "BooleanValidation",
    "CompiledForm",
    "Condition",
    "ConditionOperator",
    "CrossFieldRule",
    "DateField",
    "DateValidation",
    "Dependency",
    "DisplayStyle",
    "FieldDefinition",
    "FieldId",
    "FileField",
    "FileValidation",
    "FormDefinition",
    "FormValidation",
    "InputType",
    "MultiSelectField",
    "MultiSelectValidation",
    "NonNegative",
    "Number",
    "NumberField",
    "NumberValidation",
    "Option",
    "Positive",
    "Rendering",
    "Scalar",
    "SelectField",
    "SelectValidation",
    "TextField",
    "TextFormat",
    "TextValidation",
    "UrlField",
    "UrlValidation",
    "compile_form",
    "load_form",
    "sensitive_name",
    "sensitive_reason",
    "validate_form_answer",
    "visible_fields",
]
