"""The form definition language (seed 000): 8 field types -> requestedSchema + validation.

This module is the public facade; each job lives in its own module, so each can be read
alone:

* :mod:`~erlmcp_py.core.forms_base` -- pydantic config and constrained scalars of the models;
* :mod:`~erlmcp_py.core.forms_conditions` -- conditions: the language, visibility order,
  the fields an answer shows;
* :mod:`~erlmcp_py.core.forms_fields` -- the eight field types and their rules;
* :mod:`~erlmcp_py.core.forms_definition` -- the whole form, its cross-field checks,
  :func:`load_form`;
* :mod:`~erlmcp_py.core.forms_sensitive` -- fields that force URL mode (sensitive data);
* :mod:`~erlmcp_py.core.forms_wire` -- the wire ``requestedSchema`` per protocol version;
* :mod:`~erlmcp_py.core.forms_jsonschema` -- the server-side JSON Schema 2020-12;
* :mod:`~erlmcp_py.core.forms_compile` -- :func:`compile_form` and :class:`CompiledForm`;
* :mod:`~erlmcp_py.core.forms_messages` -- wording of :class:`AnswerError` values;
* :mod:`~erlmcp_py.core.forms_extra_checks` -- the checks JSON Schema cannot express;
* :mod:`~erlmcp_py.core.forms_answers` -- :func:`validate_form_answer`.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

from erlmcp_py.core.forms_answers import validate_form_answer
from erlmcp_py.core.forms_base import (
    FieldId as FieldId,
    NonNegative as NonNegative,
    Number as Number,
    Positive as Positive,
    Scalar as Scalar,
)
from erlmcp_py.core.forms_compile import CompiledForm, compile_form
from erlmcp_py.core.forms_conditions import (
    Condition,
    ConditionOperator as ConditionOperator,
    visible_fields,
)
from erlmcp_py.core.forms_definition import (
    CrossFieldRule,
    Dependency,
    FormDefinition,
    FormValidation,
    load_form,
)
from erlmcp_py.core.forms_fields import (
    FIELD_TYPES,
    AnyField,
    BooleanField,
    BooleanValidation as BooleanValidation,
    DateField,
    DateValidation,
    DisplayStyle as DisplayStyle,
    FieldDefinition,
    FileField,
    FileValidation,
    InputType as InputType,
    MultiSelectField,
    MultiSelectValidation,
    NumberField,
    NumberValidation,
    Option,
    Rendering,
    SelectField,
    SelectValidation as SelectValidation,
    TextField,
    TextFormat as TextFormat,
    TextValidation,
    UrlField,
    UrlValidation,
)
from erlmcp_py.core.forms_sensitive import sensitive_name, sensitive_reason

__all__ = [
    "FIELD_TYPES",
    "AnyField",
    "BooleanField",
    "CompiledForm",
    "Condition",
    "CrossFieldRule",
    "DateField",
    "DateValidation",
    "Dependency",
    "FieldDefinition",
    "FileField",
    "FileValidation",
    "FormDefinition",
    "FormValidation",
    "MultiSelectField",
    "MultiSelectValidation",
    "NumberField",
    "NumberValidation",
    "Option",
    "Rendering",
    "SelectField",
    "TextField",
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
