"""The form definition language (seed 000): 8 field types -> requestedSchema + validation.

Theory of operation
-------------------
A form is *defined* once, as data (a dict/JSON from configuration, or the pydantic models
below), and *compiled* once per protocol version by :func:`compile_form` into a
:class:`CompiledForm` that carries three artefacts:

(a) ``requested_schema`` -- what goes on the wire in a form-mode ``elicitation/create``. It is
    built only from the MCP subset (:mod:`erlmcp_py.core.schema` builders, down-levelled to the
    version and checked), so rules the wire cannot carry (``pattern``, exclusive bounds,
    ``multipleOf``, date ranges, URL safety, cross-field rules, conditions) are left out of it.
(b) ``validation_schema`` -- a JSON Schema 2020-12 document with *all* the rules the schema
    language can express (``pattern``, ``exclusiveMinimum``, ``multipleOf``, ``uniqueItems``,
    ``if``/``then`` for conditional requirements, ``additionalProperties: false``). It applies
    to an answer from which the fields hidden by conditions have been removed.
(c) ``needs_url_mode`` -- the MCP spec forbids asking for passwords, API keys, tokens, secrets
    or payment credentials in form mode, and files cannot travel in a form answer. A ``file``
    field or a *sensitive* field (``inputType: password``, a sensitive ``autocomplete`` token,
    ``sensitive: true``, or an id/label such as ``api_key``, ``passwd``, ``accessToken``,
    ``credit-card``, ``SSN``) makes the compiled form URL-mode only: ``needs_url_mode`` says
    why and ``requested_schema`` is ``None``.

:func:`validate_form_answer` checks an accepted answer in this order: defaults are filled in
for absent optional fields; conditions are evaluated in dependency order and every field they
hide is removed (a hidden field is treated as absent, whatever the client sent); the
``validation_schema`` runs; then the checks JSON Schema cannot express run on the fields that
passed it (ECMA-262 ``$`` semantics for ``pattern``, date ranges, the URL policy of
:func:`erlmcp_py.core.urlpolicy.parse_url` -- parsing only, resolution belongs to the shell --
file extensions, cross-field rules). Errors are :class:`~erlmcp_py.core.validation.AnswerError`
values (seed 000's ``field / constraint / expected / path / message``); like every error of
the runtime they never contain the submitted value.

Conditions (seed 000 §3.2.3, §4.3) come from three equivalent places: a field's
``showWhen``/``requiredWhen``, its ``rendering.conditionalDisplay``, and the form's
``validation.dependencies`` (``show``/``enable`` = shown when the condition holds,
``hide``/``disable`` = hidden when it holds, ``require``/``validate`` = required when it holds).
A condition compares the (visible) value of another field: ``equals``, ``not_equals``, ``in``,
``not_in``, ``present``, ``absent``, ``contains`` (multi-select). Cycles are refused.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import ipaddress
import math
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Any, Final, Literal, TypeAlias

from jsonschema import Draft202012Validator, FormatChecker  # type: ignore[import-untyped]
from pydantic import (
    AliasChoices,
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from erlmcp_py.core.errors import FormDefinitionError, SchemaNotAllowed, UnsafeURLError
from erlmcp_py.core.schema import (
    FORMATS,
    FrozenDict,
    boolean_field,
    check_requested_schema,
    downlevel,
    enum_field,
    freeze,
    integer_field,
    multi_select_field,
    number_field,
    object_schema,
    string_field,
    thaw,
)
from erlmcp_py.core.urlpolicy import UrlPolicy, parse_url
from erlmcp_py.core.validation import (
    AnswerError,
    ValidationResult,
    json_pointer,
    not_an_object,
    value_facts,
)

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

#: The eight field types of the language, in seed order.
FIELD_TYPES: Final = ("text", "number", "boolean", "date", "select", "multi_select", "url", "file")

_DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"

# --------------------------------------------------------------------------------------------
# Definition models (pydantic at the boundary: camelCase or snake_case keys, unknown keys refused)
# --------------------------------------------------------------------------------------------

Number: TypeAlias = StrictInt | Annotated[StrictFloat, AllowInfNan(False)]
Scalar: TypeAlias = StrictStr | StrictBool | StrictInt | Annotated[StrictFloat, AllowInfNan(False)]
FieldId: TypeAlias = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")]
NonNegative: TypeAlias = Annotated[StrictInt, Field(ge=0)]
Positive: TypeAlias = Annotated[StrictInt, Field(gt=0)]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


ConditionOperator: TypeAlias = Literal[
    "equals", "not_equals", "in", "not_in", "present", "absent", "contains"
]


def _json_equal(a: object, b: object) -> bool:
    """JSON equality as JSON Schema's ``const`` has it: ``1 == 1.0`` but ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


class Condition(_Model):
    """``field <operator> value``: the test of a conditional display or requirement.

    Attributes:
        field: Id of the controlling field.
        operator: ``equals`` (default), ``not_equals``, ``in``, ``not_in`` (value is a list),
            ``present``, ``absent`` (no value), ``contains`` (a multi-select holds value).
        value: The value compared with; absent fields never equal anything.
    """

    field: FieldId
    operator: ConditionOperator = "equals"
    value: Scalar | tuple[Scalar, ...] | None = None

    @model_validator(mode="after")
    def _value_fits_operator(self) -> Condition:
        op, value = self.operator, self.value
        if op in ("present", "absent"):
            if value is not None:
                raise ValueError(f"operator {op!r} takes no value")
        elif op in ("in", "not_in"):
            if not isinstance(value, tuple) or not value:
                raise ValueError(f"operator {op!r} needs a non-empty list value")
        elif value is None or isinstance(value, tuple):
            raise ValueError(f"operator {op!r} needs a single (non-null) value")
        return self

    def holds(self, content: Mapping[str, Any]) -> bool:
        """Evaluate the condition on an answer (absent fields never equal anything)."""
        op = self.operator
        present = self.field in content
        if op == "present":
            return present
        if op == "absent":
            return not present
        if not present:
            return op in ("not_equals", "not_in")
        actual = content[self.field]
        if op == "equals":
            return _json_equal(actual, self.value)
        if op == "not_equals":
            return not _json_equal(actual, self.value)
        if op == "contains":
            return isinstance(actual, list) and any(_json_equal(x, self.value) for x in actual)
        options = self.value if isinstance(self.value, tuple) else ()
        found = any(_json_equal(actual, v) for v in options)
        return found if op == "in" else not found

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema 2020-12 equivalent of :meth:`holds`, for ``if`` clauses."""
        f, op, v = self.field, self.operator, self.value
        if op == "present":
            return {"required": [f]}
        if op == "absent":
            return {"not": {"required": [f]}}
        if op in ("equals", "not_equals"):
            positive: dict[str, Any] = {"required": [f], "properties": {f: {"const": v}}}
        elif op == "contains":
            positive = {
                "required": [f],
                "properties": {f: {"type": "array", "contains": {"const": v}}},
            }
        else:
            options = list(v) if isinstance(v, tuple) else []
            positive = {"required": [f], "properties": {f: {"enum": options}}}
        return {"not": positive} if op.startswith("not_") else positive


class Option(_Model):
    """A choice of a select: ``value`` is what the answer holds, ``title`` what is shown."""

    value: StrictStr
    title: StrictStr | None = Field(default=None, validation_alias=AliasChoices("title", "label"))


DisplayStyle: TypeAlias = Literal[
    "dropdown",
    "radio",
    "checkbox",
    "toggle",
    "segmented",
    "multiselect_dropdown",
    "chips",
    "slider",
    "text",
    "password",
    "email",
    "tel",
]
InputType: TypeAlias = Literal[
    "text",
    "password",
    "email",
    "tel",
    "url",
    "number",
    "date",
    "time",
    "datetime_local",
    "datetime-local",
]


class Rendering(_Model):
    """Rendering hints (seed 000 §4). Clients may ignore them; none reaches the wire except
    ``helpText``, which is folded into the property ``description``. ``hidden`` removes the
    field from the wire and ignores any value sent for it; ``conditionalDisplay`` is a
    :class:`Condition` (same as the field's ``showWhen``)."""

    placeholder: StrictStr | None = None
    help_text: StrictStr | None = None
    display_style: DisplayStyle | None = None
    readonly: StrictBool | None = None
    hidden: StrictBool | None = None
    autocomplete: StrictStr | None = None
    grid_column: Positive | None = None
    grid_row: Positive | None = None
    break_after: StrictBool | None = None
    input_type: InputType | None = None
    step: Annotated[Number, Field(gt=0)] | None = None
    rows: Positive | None = None
    conditional_display: Condition | None = None
    validation_trigger: Literal["on_change", "on_blur", "on_submit"] | None = None
    debounce_ms: Positive | None = None
    searchable: StrictBool | None = None
    display_format: StrictStr | None = None
    enable_time: StrictBool | None = None
    test_button: StrictBool | None = None
    accept_attribute: StrictStr | None = None
    drag_and_drop: StrictBool | None = None
    preview: StrictBool | None = None
    aria_label: StrictStr | None = None
    aria_described_by: StrictStr | None = None
    tab_index: StrictInt | None = None


def _check_pair(lo: float | None, hi: float | None, names: str) -> None:
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"{names}: the lower bound is greater than the upper bound")


#: Text formats: the four MCP ones travel on the wire; the rest are checked server-side only.
TextFormat: TypeAlias = Literal[
    "email", "uri", "date", "date-time", "uuid", "hostname", "ipv4", "ipv6"
]


class TextValidation(_Model):
    """Rules of a ``text`` field."""

    min_length: NonNegative | None = None
    max_length: NonNegative | None = None
    pattern: Annotated[StrictStr, Field(max_length=1000)] | None = None
    format: TextFormat | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TextValidation:
        _check_pair(self.min_length, self.max_length, "minLength/maxLength")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern is not a valid regular expression: {exc}") from None
        return self


class NumberValidation(_Model):
    """Rules of a ``number`` field; ``integer`` (or ``multipleOf: 1``) makes it whole."""

    minimum: Number | None = None
    maximum: Number | None = None
    exclusive_minimum: Number | None = None
    exclusive_maximum: Number | None = None
    multiple_of: Annotated[Number, Field(gt=0)] | None = None
    integer: StrictBool = False

    @model_validator(mode="after")
    def _consistent(self) -> NumberValidation:
        _check_pair(self.minimum, self.maximum, "minimum/maximum")
        lo = max((b for b in (self.minimum, self.exclusive_minimum) if b is not None), default=None)
        hi = min((b for b in (self.maximum, self.exclusive_maximum) if b is not None), default=None)
        _check_pair(lo, hi, "bounds")
        return self

    @property
    def is_integer(self) -> bool:
        """True when only whole numbers are accepted."""
        return self.integer or self.multiple_of == 1


def _parse_moment(text: str, fmt: str) -> date | datetime | None:
    """Parse an ISO date (``date``) or an RFC 3339 date-time; ``None`` when it is neither."""
    if fmt == "date" or (fmt == "date-time" and len(text) == 10):
        return date.fromisoformat(text) if FORMATS["date"](text) else None
    if not FORMATS["date-time"](text):
        return None
    try:
        return datetime.fromisoformat(text.upper())
    except ValueError:  # pragma: no cover - the RFC 3339 check above is stricter
        return None


class DateValidation(_Model):
    """Rules of a ``date`` field: ``format`` ``date`` or ``date-time``; inclusive bounds in
    ISO 8601 (a ``date-time`` field may be bounded by dates or RFC 3339 date-times)."""

    format: Literal["date", "date-time"] = "date"
    minimum: StrictStr | None = None
    maximum: StrictStr | None = None

    @model_validator(mode="after")
    def _consistent(self) -> DateValidation:
        bounds = []
        for name in ("minimum", "maximum"):
            text = getattr(self, name)
            if text is None:
                continue
            moment = _parse_moment(text, "date" if self.format == "date" else "date-time")
            if moment is None:
                raise ValueError(f"{name} {text!r} is not an ISO {self.format}")
            bounds.append(moment)
        if len(bounds) == 2 and _compare(bounds[0], bounds[1]) > 0:
            raise ValueError("minimum is after maximum")
        return self


class SelectValidation(_Model):
    """A ``select`` has no rule besides its options."""


class BooleanValidation(_Model):
    """A ``boolean`` has no rule."""


class MultiSelectValidation(_Model):
    """Rules of a ``multi_select``: how many choices (``minItems``/``minSelections``...)."""

    min_items: NonNegative | None = Field(
        default=None,
        validation_alias=AliasChoices("minItems", "minSelections", "min_items", "min_selections"),
    )
    max_items: NonNegative | None = Field(
        default=None,
        validation_alias=AliasChoices("maxItems", "maxSelections", "max_items", "max_selections"),
    )
    unique_items: Literal[True] = True

    @model_validator(mode="after")
    def _consistent(self) -> MultiSelectValidation:
        _check_pair(self.min_items, self.max_items, "minItems/maxItems")
        return self


class UrlValidation(_Model):
    """Rules of a ``url`` field. The URL policy (https only, no private/loopback/... hosts,
    see :mod:`erlmcp_py.core.urlpolicy`) always applies; ``allowedSchemes`` can only narrow
    it, and ``blockPrivateIPs``/``blockLocalhost`` cannot be turned off."""

    format: Literal["uri"] = "uri"
    allowed_schemes: tuple[Literal["https", "http"], ...] = ("https",)
    block_private_ips: StrictBool = Field(
        default=True,
        validation_alias=AliasChoices("blockPrivateIPs", "blockPrivateIps", "block_private_ips"),
    )
    block_localhost: StrictBool = True
    max_length: Positive | None = None

    @field_validator("block_private_ips", "block_localhost")
    @classmethod
    def _always_on(cls, value: bool) -> bool:
        if not value:
            raise ValueError(
                "SSRF protection cannot be turned off in a form; "
                "use UrlPolicy(allow_http_loopback_dev=True) for local development"
            )
        return value

    @field_validator("allowed_schemes")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("allowedSchemes must name at least one scheme")
        return value


class FileValidation(_Model):
    """Rules of a ``file`` field (checked on the uploaded file's metadata)."""

    max_size: Positive | None = None
    allowed_mime_types: tuple[StrictStr, ...] | None = None
    allowed_extensions: tuple[StrictStr, ...] | None = None

    @field_validator("allowed_extensions")
    @classmethod
    def _normalise_extensions(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        return tuple(("" if e.startswith(".") else ".") + e.lower() for e in value)


class _FieldBase(_Model):
    """Keys every field has (seed 000 §2.1) plus conditions and the ``sensitive`` override."""

    id: FieldId
    label: Annotated[StrictStr, Field(min_length=1, max_length=500)]
    description: StrictStr | None = None
    required: StrictBool = False
    rendering: Rendering = Rendering()
    dependencies: tuple[FieldId, ...] = ()
    show_when: Condition | None = None
    required_when: Condition | None = None
    sensitive: StrictBool | None = None

    @field_validator("default", mode="before", check_fields=False)
    @classmethod
    def _empty_default_is_none(cls, value: object) -> object:
        # Seed 000 writes `"default": ""` for "no pre-filled text" (even with minLength 3).
        return None if value == "" else value


class TextField(_FieldBase):
    """Free text (``string``)."""

    type: Literal["text"]
    default: StrictStr | None = None
    validation: TextValidation = TextValidation()


class NumberField(_FieldBase):
    """A number (``number``, or ``integer`` when ``validation.integer``)."""

    type: Literal["number"]
    default: Number | None = None
    validation: NumberValidation = NumberValidation()


class BooleanField(_FieldBase):
    """A yes/no choice."""

    type: Literal["boolean"]
    default: StrictBool | None = None
    validation: BooleanValidation = BooleanValidation()


class DateField(_FieldBase):
    """An ISO 8601 date (or RFC 3339 date-time) string."""

    type: Literal["date"]
    default: StrictStr | None = None
    validation: DateValidation = DateValidation()


def _option_values(options: Sequence[str | Option]) -> list[str]:
    return [o if isinstance(o, str) else o.value for o in options]


def _unique_options(options: tuple[str | Option, ...]) -> tuple[str | Option, ...]:
    values = _option_values(options)
    if len(set(values)) != len(values):
        raise ValueError("option values must be unique")
    return options


class SelectField(_FieldBase):
    """One choice among ``options`` (strings, or ``{value, title}``/``{value, label}``)."""

    type: Literal["select"]
    options: Annotated[tuple[StrictStr | Option, ...], Field(min_length=1)]
    default: StrictStr | None = None
    validation: SelectValidation = SelectValidation()

    @field_validator("options")
    @classmethod
    def _unique(cls, options: tuple[str | Option, ...]) -> tuple[str | Option, ...]:
        return _unique_options(options)


class MultiSelectField(_FieldBase):
    """Several choices among ``options``; the answer is a list without repeats."""

    type: Literal["multi_select"]
    options: Annotated[tuple[StrictStr | Option, ...], Field(min_length=1)]
    default: tuple[StrictStr, ...] | None = None
    validation: MultiSelectValidation = MultiSelectValidation()

    @field_validator("options")
    @classmethod
    def _unique(cls, options: tuple[str | Option, ...]) -> tuple[str | Option, ...]:
        return _unique_options(options)


class UrlField(_FieldBase):
    """A URL, checked by the URL policy (parsing only; resolution happens in the shell)."""

    type: Literal["url"]
    default: StrictStr | None = None
    validation: UrlValidation = UrlValidation()


class FileField(_FieldBase):
    """A file upload: never in form mode (the compiled form needs URL mode)."""

    type: Literal["file"]
    default: None = None
    validation: FileValidation = FileValidation()


FieldDefinition: TypeAlias = Annotated[
    TextField
    | NumberField
    | BooleanField
    | DateField
    | SelectField
    | MultiSelectField
    | UrlField
    | FileField,
    Field(discriminator="type"),
]


class Dependency(_Model):
    """A form-level dependency (seed 000 §3.2.3): ``action`` when ``condition`` holds."""

    condition: Condition
    action: Literal["show", "hide", "enable", "disable", "require", "validate"]


class CrossFieldRule(_Model):
    """``left <operator> right`` between two number or two date fields, checked when both
    are present and visible."""

    left: FieldId
    operator: Literal["lt", "le", "gt", "ge", "eq", "ne"]
    right: FieldId
    message: StrictStr | None = None


class FormValidation(_Model):
    """Form-level rules: dependencies per field id, and cross-field rules."""

    dependencies: dict[FieldId, Dependency | tuple[Dependency, ...]] = {}
    rules: tuple[CrossFieldRule, ...] = ()


class _SemanticProblems(ValueError):
    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{loc}: {msg}" for loc, msg in problems))
        self.problems = problems


class FormDefinition(_Model):
    """A whole form (seed 000 §1.2).

    Attributes:
        id: Unique form id.
        title: Title shown to the user (the elicitation message starts with it).
        description: Optional longer text.
        fields: The fields, in display order (at least one, at most 100).
        validation: Form-level dependencies and cross-field rules.
        metadata: Free JSON for the application.
        timeout: Deadline in milliseconds (the runtime clamps it to its policy).
        allow_partial: When true, no field is required.
    """

    id: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    title: Annotated[StrictStr, Field(min_length=1)]
    description: StrictStr | None = None
    fields: Annotated[tuple[FieldDefinition, ...], Field(min_length=1, max_length=100)]
    validation: FormValidation = FormValidation()
    metadata: dict[str, JsonValue] = {}
    timeout: Positive | None = None
    allow_partial: StrictBool = False

    @model_validator(mode="after")
    def _semantics(self) -> FormDefinition:
        problems = _semantic_problems(self)
        if problems:
            raise _SemanticProblems(problems)
        return self

    def field(self, field_id: str) -> FieldDefinition:
        """The field with id ``field_id``.

        Raises:
            KeyError: no such field.
        """
        for f in self.fields:
            if f.id == field_id:
                return f
        raise KeyError(field_id)


AnyField: TypeAlias = (
    TextField
    | NumberField
    | BooleanField
    | DateField
    | SelectField
    | MultiSelectField
    | UrlField
    | FileField
)


# --------------------------------------------------------------------------------------------
# Conditions, normalised: per field, what shows it and what requires it
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Show:
    condition: Condition
    negate: bool  # hide/disable: shown when the condition does NOT hold

    def holds(self, content: Mapping[str, Any]) -> bool:
        return self.condition.holds(content) != self.negate

    def json_schema(self) -> dict[str, Any]:
        s = self.condition.json_schema()
        return {"not": s} if self.negate else s


@dataclass(frozen=True, slots=True)
class _Plan:
    field: AnyField
    index: int
    shows: tuple[_Show, ...]
    requires_when: tuple[Condition, ...]

    @property
    def id(self) -> str:
        return self.field.id


def _conditions_of(
    form: FormDefinition,
) -> dict[str, tuple[list[tuple[str, _Show]], list[tuple[str, Condition]]]]:
    """Per field id: (show rules, required-when rules), each with the location it came from."""
    out: dict[str, tuple[list[tuple[str, _Show]], list[tuple[str, Condition]]]] = {
        f.id: ([], []) for f in form.fields
    }
    for i, f in enumerate(form.fields):
        shows, reqs = out[f.id]
        if f.show_when is not None:
            shows.append((f"fields.{i}.showWhen", _Show(f.show_when, False)))
        if f.rendering.conditional_display is not None:
            loc = f"fields.{i}.rendering.conditionalDisplay"
            shows.append((loc, _Show(f.rendering.conditional_display, False)))
        if f.required_when is not None:
            reqs.append((f"fields.{i}.requiredWhen", f.required_when))
    for target, deps in form.validation.dependencies.items():
        if target not in out:
            continue
        items = deps if isinstance(deps, tuple) else (deps,)
        for j, dep in enumerate(items):
            loc = f"validation.dependencies.{target}" + (f".{j}" if isinstance(deps, tuple) else "")
            shows, reqs = out[target]
            if dep.action in ("show", "enable"):
                shows.append((loc, _Show(dep.condition, False)))
            elif dep.action in ("hide", "disable"):
                shows.append((loc, _Show(dep.condition, True)))
            else:
                reqs.append((loc, dep.condition))
    return out


def _visibility_order(
    form: FormDefinition, shows: Mapping[str, Sequence[_Show]]
) -> tuple[list[str], list[str]]:
    """Topological order of fields by their show conditions; and the fields on a cycle."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    cyclic: list[str] = []

    def visit(fid: str) -> None:
        state[fid] = 1
        for show in shows.get(fid, ()):
            dep = show.condition.field
            if dep not in shows:
                continue
            if state.get(dep) == 1:
                cyclic.append(fid)
            elif dep not in state:
                visit(dep)
        state[fid] = 2
        order.append(fid)

    for f in form.fields:
        if f.id not in state:
            visit(f.id)
    return order, cyclic


def _condition_value_problem(cond: Condition, controller: AnyField) -> str | None:
    values: tuple[Any, ...] = ()
    if cond.operator in ("equals", "not_equals", "contains"):
        values = (cond.value,)
    elif cond.operator in ("in", "not_in") and isinstance(cond.value, tuple):
        values = cond.value
    if cond.operator == "contains" and controller.type != "multi_select":
        return "'contains' needs a multi_select field"
    if isinstance(controller, SelectField | MultiSelectField):
        options = set(_option_values(controller.options))
        bad = [v for v in values if not (isinstance(v, str) and v in options)]
        if bad:
            return f"value {bad[0]!r} is not an option of {controller.id!r}"
    elif isinstance(controller, BooleanField):
        if any(type(v) is not bool for v in values):
            return f"{controller.id!r} is a boolean; compare it with true or false"
    elif isinstance(controller, NumberField) and any(
        isinstance(v, bool) or not isinstance(v, int | float) for v in values
    ):
        return f"{controller.id!r} is a number; compare it with numbers"
    return None


def _semantic_problems(form: FormDefinition) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    by_id: dict[str, AnyField] = {}
    all_ids = {f.id for f in form.fields}
    for i, f in enumerate(form.fields):
        if f.id in by_id:
            problems.append((f"fields.{i}.id", f"duplicate field id {f.id!r}"))
        by_id.setdefault(f.id, f)
        if f.show_when is not None and f.rendering.conditional_display is not None:
            problems.append(
                (f"fields.{i}.showWhen", "give showWhen or rendering.conditionalDisplay, not both")
            )
        for j, dep in enumerate(f.dependencies):
            if dep not in all_ids:
                problems.append((f"fields.{i}.dependencies.{j}", f"unknown field {dep!r}"))
        if isinstance(f, MultiSelectField):
            n = len(f.options)
            if f.validation.min_items is not None and f.validation.min_items > n:
                problems.append(
                    (f"fields.{i}.validation.minItems", f"minItems exceeds the {n} options")
                )
    for target in form.validation.dependencies:
        if target not in by_id:
            problems.append((f"validation.dependencies.{target}", f"unknown field {target!r}"))
    conditions = _conditions_of(form)
    for fid, (shows, reqs) in conditions.items():
        for loc, cond in [(loc, s.condition) for loc, s in shows] + reqs:
            controller = by_id.get(cond.field)
            if controller is None:
                problems.append((f"{loc}.field", f"unknown field {cond.field!r}"))
            elif cond.field == fid:
                problems.append((f"{loc}.field", "a field cannot depend on itself"))
            else:
                why = _condition_value_problem(cond, controller)
                if why is not None:
                    problems.append((f"{loc}.value", why))
    if not problems:
        _, cyclic = _visibility_order(
            form, {k: [s for _, s in v[0]] for k, v in conditions.items()}
        )
        index = {f.id: i for i, f in enumerate(form.fields)}
        for fid in cyclic:
            problems.append((f"fields.{index[fid]}", "conditions form a cycle"))
    comparable = {"number": "number", "date": "date"}
    for k, rule in enumerate(form.validation.rules):
        loc = f"validation.rules.{k}"
        sides = [by_id.get(rule.left), by_id.get(rule.right)]
        for side, name in zip(sides, (rule.left, rule.right), strict=True):
            if side is None:
                problems.append((loc, f"unknown field {name!r}"))
        left, right = sides
        if left is not None and right is not None:
            if left.id == right.id:
                problems.append((loc, "a rule compares two different fields"))
            elif left.type not in comparable or comparable.get(left.type) != comparable.get(
                right.type
            ):
                problems.append((loc, "rules compare two number fields or two date fields"))
    return problems


# --------------------------------------------------------------------------------------------
# Sensitive data: never in form mode (MCP 2025-11-25, "Security": MUST use URL mode)
# --------------------------------------------------------------------------------------------


# Matched anywhere in the id/label with case and separators removed ("API-Key" -> "apikey").
def _terms(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_SENSITIVE_COMPOUNDS: Final = _terms(
    """password passwd passphrase passcode passwort kennwort motdepasse contrasena wachtwoord
    apikey apisecret apitoken accesskey secretkey privatekey clientsecret authtoken accesstoken
    refreshtoken bearertoken idtoken sessiontoken credential creditcard cardnumber ccnumber
    securitycode socialsecurity"""
)
# Matched only as whole words, so "max_tokens" and "pinned" stay allowed.
_SENSITIVE_WORDS: Final = frozenset(
    _terms("token secret secrets pwd pin ssn cvv cvc cvv2 cvc2 otp totp iban creds senha")
)
_SENSITIVE_AUTOCOMPLETE: Final = frozenset(
    _terms(
        """current-password new-password one-time-code cc-number cc-csc cc-exp cc-exp-month
    cc-exp-year"""
    )
)
_CAMEL_1: Final = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2: Final = re.compile(r"([A-Z]+)([A-Z][a-z])")
_NON_ALNUM: Final = re.compile(r"[^0-9a-z]+")


def _words(text: str) -> list[str]:
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    split = _CAMEL_2.sub(r"\1 \2", _CAMEL_1.sub(r"\1 \2", plain))
    return [w for w in _NON_ALNUM.split(split.lower()) if w]


def sensitive_name(text: str) -> str | None:
    """Tell whether an id or label names sensitive data; return the matched term.

    Case and separators are normalised (``API-Key``, ``api_key``, ``apiKey`` and ``APIKEY``
    all match ``apikey``); short terms (``token``, ``secret``, ``pin``, ``ssn``, ``cvv`` ...)
    must be whole words, so ``max_tokens`` or ``pinned`` do not match.

    Args:
        text: A field id or label.

    Returns:
        The matched term, or ``None``.
    """
    words = _words(text)
    joined = "".join(words)
    for term in _SENSITIVE_COMPOUNDS:
        if term in joined:
            return term
    for word in words:
        if word in _SENSITIVE_WORDS:
            return word
    return None


def sensitive_reason(f: AnyField) -> str | None:
    """Why ``f`` may not be asked in form mode, or ``None``.

    Explicit signals always count: ``inputType: password``, a sensitive ``autocomplete`` token
    (``current-password``, ``cc-number`` ...), ``sensitive: true``. The name heuristic
    (:func:`sensitive_name` on the id and the label) applies to free-form ``text`` and
    ``number`` fields and can be overridden with ``sensitive: false``.

    Args:
        f: A field definition.

    Returns:
        A short reason, or ``None``.
    """
    if f.rendering.input_type == "password":
        return "its inputType is password"
    for token in (f.rendering.autocomplete or "").lower().split():
        if token in _SENSITIVE_AUTOCOMPLETE:
            return f"its autocomplete is {token}"
    if f.sensitive is True:
        return "it is marked sensitive"
    if f.sensitive is False or f.type not in ("text", "number"):
        return None
    for what, text in (("id", f.id), ("label", f.label)):
        term = sensitive_name(text)
        if term is not None:
            return f"its {what} looks like {term!r}"
    return None


# --------------------------------------------------------------------------------------------
# Schemas: (a) the wire requestedSchema and (b) the server-side validation schema
# --------------------------------------------------------------------------------------------


def _titles(options: Sequence[str | Option]) -> list[str] | dict[str, str]:
    if all(isinstance(o, str) or o.title is None for o in options):
        return _option_values(options)
    return {
        (o if isinstance(o, str) else o.value): (
            o if isinstance(o, str) else (o.title if o.title is not None else o.value)
        )
        for o in options
    }


def _wire_description(f: AnyField) -> str | None:
    parts = [p for p in (f.description, f.rendering.help_text) if p]
    return "\n".join(parts) if parts else None


def _url_max_length(f: UrlField, policy: UrlPolicy) -> int:
    limit = f.validation.max_length
    return policy.max_length if limit is None else min(limit, policy.max_length)


def _wire_integer_bounds(v: NumberValidation) -> tuple[int | None, int | None]:
    lows = [math.ceil(v.minimum)] if v.minimum is not None else []
    if v.exclusive_minimum is not None:
        lows.append(math.floor(v.exclusive_minimum) + 1)
    highs = [math.floor(v.maximum)] if v.maximum is not None else []
    if v.exclusive_maximum is not None:
        highs.append(math.ceil(v.exclusive_maximum) - 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _wire_property(f: AnyField, policy: UrlPolicy) -> dict[str, Any]:
    title, desc = f.label, _wire_description(f)
    if isinstance(f, TextField):
        fmt = f.validation.format if f.validation.format in FORMATS else None
        return string_field(
            title=title,
            description=desc,
            min_length=f.validation.min_length,
            max_length=f.validation.max_length,
            format=fmt,
            default=f.default,
        )
    if isinstance(f, NumberField):
        v = f.validation
        if v.is_integer:
            lo, hi = _wire_integer_bounds(v)
            default = int(f.default) if f.default is not None else None
            return integer_field(
                title=title, description=desc, minimum=lo, maximum=hi, default=default
            )
        lows = [b for b in (v.minimum, v.exclusive_minimum) if b is not None]
        highs = [b for b in (v.maximum, v.exclusive_maximum) if b is not None]
        return number_field(
            title=title,
            description=desc,
            minimum=max(lows) if lows else None,  # exclusive bounds: a looser hint on the wire
            maximum=min(highs) if highs else None,
            default=f.default,
        )
    if isinstance(f, BooleanField):
        return boolean_field(title=title, description=desc, default=f.default)
    if isinstance(f, DateField):
        return string_field(
            title=title, description=desc, format=f.validation.format, default=f.default
        )
    if isinstance(f, SelectField):
        return enum_field(_titles(f.options), title=title, description=desc, default=f.default)
    if isinstance(f, MultiSelectField):
        return multi_select_field(
            _titles(f.options),
            title=title,
            description=desc,
            min_items=f.validation.min_items,
            max_items=f.validation.max_items,
            default=f.default,
        )
    if isinstance(f, UrlField):
        return string_field(
            title=title,
            description=desc,
            format="uri",
            max_length=_url_max_length(f, policy),
            default=f.default,
        )
    raise SchemaNotAllowed(f"/properties/{f.id}", "type", "file fields need URL mode")


def _put(schema: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        schema[key] = value


def _validation_property(f: AnyField, policy: UrlPolicy) -> dict[str, Any]:
    s: dict[str, Any] = {"title": f.label}
    if isinstance(f, TextField):
        s["type"] = "string"
        _put(s, "minLength", f.validation.min_length)
        _put(s, "maxLength", f.validation.max_length)
        _put(s, "pattern", f.validation.pattern)
        _put(s, "format", f.validation.format)
    elif isinstance(f, NumberField):
        v = f.validation
        s["type"] = "integer" if v.is_integer else "number"
        _put(s, "minimum", v.minimum)
        _put(s, "maximum", v.maximum)
        _put(s, "exclusiveMinimum", v.exclusive_minimum)
        _put(s, "exclusiveMaximum", v.exclusive_maximum)
        _put(s, "multipleOf", v.multiple_of)
    elif isinstance(f, BooleanField):
        s["type"] = "boolean"
    elif isinstance(f, DateField):
        s.update(type="string", format=f.validation.format)
        # Range: checked natively (JSON Schema cannot compare dates); kept as annotations.
        _put(s, "formatMinimum", f.validation.minimum)
        _put(s, "formatMaximum", f.validation.maximum)
    elif isinstance(f, SelectField):
        s.update(type="string", enum=_option_values(f.options))
    elif isinstance(f, MultiSelectField):
        s.update(
            type="array",
            items={"type": "string", "enum": _option_values(f.options)},
            uniqueItems=True,
        )
        _put(s, "minItems", f.validation.min_items)
        _put(s, "maxItems", f.validation.max_items)
    elif isinstance(f, UrlField):
        s.update(type="string", format="uri", maxLength=_url_max_length(f, policy))
    else:
        fv = f.validation
        size: dict[str, Any] = {"type": "integer", "minimum": 0}
        _put(size, "maximum", fv.max_size)
        content_type: dict[str, Any] = {"type": "string", "minLength": 1}
        if fv.allowed_mime_types is not None:
            content_type["enum"] = list(fv.allowed_mime_types)
        s.update(
            type="object",
            properties={
                "filename": {"type": "string", "minLength": 1, "maxLength": 255},
                "content_type": content_type,
                "size": size,
            },
            required=["filename", "content_type", "size"],
        )
    if f.default is not None:
        s["default"] = list(f.default) if isinstance(f.default, tuple) else f.default
    return s


def _all_of(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    return schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _required(plan: _Plan, allow_partial: bool) -> tuple[bool, list[dict[str, Any]]]:
    """(unconditionally required?, list of ``if`` schemas each making it required)."""
    if allow_partial or plan.field.rendering.hidden:
        return False, []
    shows = [s.json_schema() for s in plan.shows]
    clauses: list[dict[str, Any]] = []
    if plan.field.required:
        if not shows:
            return True, []
        clauses.append(_all_of(shows))
    for cond in plan.requires_when:
        clauses.append(_all_of([*shows, cond.json_schema()]))
    return False, clauses


# --------------------------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------------------------


def _is_integer_field(f: AnyField) -> bool:
    return isinstance(f, NumberField) and f.validation.is_integer


def _check_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


_HOSTNAME_RE: Final = re.compile(
    r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z"
)


def _check_ip(version: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False

    return check


_EXTRA_FORMATS: Final = {
    "uuid": _check_uuid,
    "hostname": lambda v: _HOSTNAME_RE.match(v) is not None,
    "ipv4": _check_ip(4),
    "ipv6": _check_ip(6),
}
_FORMAT_CHECKER: Final = FormatChecker(formats=())
for _name, _check in {**FORMATS, **_EXTRA_FORMATS}.items():
    _FORMAT_CHECKER.checks(_name)(_check)


@dataclass(frozen=True, slots=True)
class CompiledForm:
    """A form compiled for one protocol version (see :func:`compile_form`).

    Attributes:
        form: The definition.
        version: The protocol version the wire schema is for.
        requested_schema: The frozen wire ``requestedSchema``; ``None`` when the form needs
            URL mode.
        validation_schema: The frozen server-side JSON Schema 2020-12.
        needs_url_mode: Why the form cannot be sent in form mode, or ``None``.
        url_mode_fields: The ids of the fields that force URL mode.
        url_policy: The policy ``url`` fields are checked with.
        hints: Per field id, its rendering hints and conditions as JSON (camelCase), for UIs
            such as hosted URL-mode pages.
    """

    form: FormDefinition
    version: str
    requested_schema: FrozenDict | None
    validation_schema: FrozenDict
    needs_url_mode: str | None
    url_mode_fields: tuple[str, ...]
    url_policy: UrlPolicy
    hints: FrozenDict
    _plans: tuple[_Plan, ...] = field(repr=False, compare=False)
    _order: tuple[int, ...] = field(repr=False, compare=False)
    _validator: Any = field(repr=False, compare=False)
    _field_validators: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def mode(self) -> Literal["form", "url"]:
        """``"url"`` when the form can only be asked in URL mode."""
        return "form" if self.needs_url_mode is None else "url"

    @property
    def message(self) -> str:
        """A default elicitation message: the title, then the description."""
        parts = [self.form.title, self.form.description or ""]
        return "\n\n".join(p for p in parts if p)

    @property
    def timeout_s(self) -> float | None:
        """The form's ``timeout`` in seconds (the runtime clamps it to its policy)."""
        return None if self.form.timeout is None else self.form.timeout / 1000

    def validate(self, content: object) -> ValidationResult:
        """:func:`validate_form_answer` (so a compiled form is the runtime's validator)."""
        return validate_form_answer(self, content)

    def url_values(self, content: Mapping[str, Any]) -> list[tuple[str, str]]:
        """``(field id, url)`` of every ``url`` field answered in validated ``content``.

        The runtime resolves each host name (``check_url``) after validation: parsing here
        is pure, resolution is I/O.
        """
        return [
            (p.id, value)
            for p in self._plans
            if isinstance(p.field, UrlField) and isinstance(value := content.get(p.id), str)
        ]


def load_form(data: FormDefinition | Mapping[str, Any] | str | bytes) -> FormDefinition:
    """Validate a form definition given as a dict, JSON text or a model.

    Args:
        data: The definition (camelCase keys as in seed 000, or snake_case).

    Returns:
        The frozen :class:`FormDefinition`.

    Raises:
        FormDefinitionError: every problem found, each with its dotted location.
    """
    if isinstance(data, FormDefinition):
        return data
    try:
        if isinstance(data, str | bytes):
            return FormDefinition.model_validate_json(data)
        return FormDefinition.model_validate(data)
    except ValidationError as exc:
        problems: list[tuple[str, str]] = []
        for err in exc.errors(include_url=False):
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, _SemanticProblems):
                problems.extend(cause.problems)
                continue
            parts = list(err["loc"])
            if len(parts) > 2 and parts[0] == "fields" and parts[2] in FIELD_TYPES:
                del parts[2]  # the discriminator tag pydantic inserts
            message = err["msg"].removeprefix("Value error, ")
            problems.append((".".join(str(p) for p in parts), message))
        raise FormDefinitionError(problems) from None


def _hints(f: AnyField) -> dict[str, Any]:
    out: dict[str, Any] = {"type": f.type, "label": f.label}
    out.update(f.rendering.model_dump(mode="json", exclude_none=True))
    for key in ("show_when", "required_when"):
        cond = getattr(f, key)
        if cond is not None:
            out[to_camel(key)] = cond.model_dump(mode="json", exclude_none=True)
    return out


def compile_form(
    form: FormDefinition | Mapping[str, Any] | str | bytes,
    version: str,
    *,
    url_policy: UrlPolicy | None = None,
) -> CompiledForm:
    """Compile a form for a protocol version.

    Args:
        form: The definition (see :func:`load_form`).
        version: The negotiated protocol version (``2025-06-18``, ``2025-11-25``,
            ``2026-07-28``); the wire schema is down-levelled to it.
        url_policy: The policy for ``url`` fields; defaults to :class:`UrlPolicy`'s.

    Returns:
        The :class:`CompiledForm`. When a field forces URL mode, ``requested_schema`` is
        ``None`` and ``needs_url_mode`` says why.

    Raises:
        FormDefinitionError: the definition is invalid (including a ``default`` that breaks
            its own field's rules).
        SchemaNotAllowed: the form cannot be expressed for ``version`` (e.g. a multi-select
            for a 2025-06-18 client).
        ValueError: ``version`` has no form elicitation.
    """
    definition = load_form(form)
    policy = url_policy or UrlPolicy()
    conditions = _conditions_of(definition)
    plans = tuple(
        _Plan(
            field=f,
            index=i,
            shows=tuple(s for _, s in conditions[f.id][0]),
            requires_when=tuple(c for _, c in conditions[f.id][1]),
        )
        for i, f in enumerate(definition.fields)
    )
    order_ids, _ = _visibility_order(
        definition, {p.id: p.shows for p in plans}
    )  # cycles were refused when the definition was validated
    index_of = {p.id: p.index for p in plans}

    properties: dict[str, Any] = {}
    required: list[str] = []
    clauses: list[dict[str, Any]] = []
    for p in plans:
        properties[p.id] = _validation_property(p.field, policy)
        always, conditional = _required(p, definition.allow_partial)
        if always:
            required.append(p.id)
        clauses.extend({"if": c, "then": {"required": [p.id]}} for c in conditional)
    validation_schema: dict[str, Any] = {
        "$schema": _DRAFT_2020_12,
        "$id": f"urn:erlmcp-py:form:{definition.id}",
        "title": definition.title,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if clauses:
        validation_schema["allOf"] = clauses
    Draft202012Validator.check_schema(validation_schema)
    validator = Draft202012Validator(validation_schema, format_checker=_FORMAT_CHECKER)

    compiled = CompiledForm(
        form=definition,
        version=version,
        requested_schema=None,
        validation_schema=freeze(validation_schema),
        needs_url_mode=None,
        url_mode_fields=(),
        url_policy=policy,
        hints=freeze({p.id: _hints(p.field) for p in plans}),
        _plans=plans,
        _order=tuple(index_of[i] for i in order_ids),
        _validator=validator,
        _field_validators={
            p.id: Draft202012Validator(properties[p.id], format_checker=_FORMAT_CHECKER)
            for p in plans
        },
    )
    _check_defaults(compiled)

    reasons: list[str] = []
    url_fields: list[str] = []
    for p in plans:
        if isinstance(p.field, FileField):
            reasons.append(f"field {p.id!r} is a file upload, which form mode cannot carry")
            url_fields.append(p.id)
            continue
        why = sensitive_reason(p.field)
        if why is not None:
            reasons.append(
                f"field {p.id!r} asks for sensitive data ({why}); "
                "the MCP spec requires URL mode for it"
            )
            url_fields.append(p.id)
    if reasons:
        return _replace(compiled, needs_url_mode="; ".join(reasons), url_fields=url_fields)
    return _replace(compiled, requested_schema=_wire_schema(definition, plans, version, policy))


def _replace(
    compiled: CompiledForm,
    *,
    requested_schema: FrozenDict | None = None,
    needs_url_mode: str | None = None,
    url_fields: Iterable[str] = (),
) -> CompiledForm:
    return CompiledForm(
        form=compiled.form,
        version=compiled.version,
        requested_schema=requested_schema,
        validation_schema=compiled.validation_schema,
        needs_url_mode=needs_url_mode,
        url_mode_fields=tuple(url_fields),
        url_policy=compiled.url_policy,
        hints=compiled.hints,
        _plans=compiled._plans,
        _order=compiled._order,
        _validator=compiled._validator,
        _field_validators=compiled._field_validators,
    )


def _wire_schema(
    form: FormDefinition, plans: Sequence[_Plan], version: str, policy: UrlPolicy
) -> FrozenDict:
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in plans:
        if p.field.rendering.hidden:
            continue
        try:
            props[p.id] = _wire_property(p.field, policy)
        except SchemaNotAllowed as exc:
            raise SchemaNotAllowed(
                f"/properties/{p.id}{exc.path}", exc.keyword, exc.detail
            ) from None
        if p.field.required and not p.shows and not form.allow_partial:
            required.append(p.id)
    if not props:
        raise SchemaNotAllowed("", "properties", "every field of the form is hidden")
    wire = downlevel(object_schema(props, required), version)
    check_requested_schema(wire, version)
    frozen: FrozenDict = freeze(wire)
    return frozen


def _check_defaults(compiled: CompiledForm) -> None:
    problems: list[tuple[str, str]] = []
    for p in compiled._plans:
        default = p.field.default
        if default is None:
            continue
        value = list(default) if isinstance(default, tuple) else default
        errors = _value_errors(compiled, p, value)
        problems.extend((f"fields.{p.index}.default", e.message) for e in errors)
    if problems:
        raise FormDefinitionError(problems)


# --------------------------------------------------------------------------------------------
# Validating answers
# --------------------------------------------------------------------------------------------


def _num(v: object) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


_TYPE_WORDS: Final = {
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "a list of choices",
    "object": "an object",
}
_FORMAT_WORDS: Final = {
    "email": "a valid email address",
    "uri": "an absolute URI (e.g. https://example.com/)",
    "date": "a date as YYYY-MM-DD",
    "date-time": "a date and time in RFC 3339 form (e.g. 2025-01-31T09:30:00Z)",
    "uuid": "a UUID",
    "hostname": "a host name",
    "ipv4": "an IPv4 address",
    "ipv6": "an IPv6 address",
}


_MISSING: Final = object()


def _error(
    p: _Plan,
    constraint: str,
    expected: str | int | float | bool | tuple[str, ...],
    value: object,
    message: str,
    where: tuple[str | int, ...] = (),
) -> AnswerError:
    jt, length, items = value_facts(value) if value is not _MISSING else (None, None, None)
    return AnswerError(
        field=p.id,
        constraint=constraint,
        expected=expected,
        path=json_pointer(p.id, *where),
        message=f"{p.field.label}: {message}.",
        actual_type=jt,
        actual_length=length,
        actual_items=items,
    )


def _from_jsonschema(
    p: _Plan, keyword: str, expected: Any, value: object, where: tuple[Any, ...]
) -> AnswerError:
    """Turn one jsonschema error on a field's value into an :class:`AnswerError`."""
    jt, length, items = value_facts(value)
    f = p.field
    exp: str | int | float | bool | tuple[str, ...] = (
        expected if isinstance(expected, str | int | float | bool) else str(expected)
    )
    in_file = isinstance(f, FileField) and bool(where)
    if keyword == "type":
        msg = f"must be {_TYPE_WORDS.get(expected, expected)} (got {jt})"
        if where and isinstance(f, MultiSelectField):
            msg = f"choice {where[0]} must be one of the options (got {jt})"
    elif keyword == "enum":
        exp = tuple(str(v) for v in expected)
        if in_file:
            keyword, msg = "allowedMimeTypes", f"the file type must be one of: {', '.join(exp)}"
        else:
            shown = ", ".join(exp[:10]) + (f" and {len(exp) - 10} more" if len(exp) > 10 else "")
            prefix = f"choice {where[0]} " if where else ""
            msg = f"{prefix}must be one of: {shown}"
    elif keyword == "format":
        msg = f"must be {_FORMAT_WORDS.get(expected, expected)}"
    elif keyword == "pattern":
        msg = "does not have the expected form"
    elif keyword in ("minLength", "maxLength"):
        word = "at least" if keyword == "minLength" else "at most"
        msg = f"must be {word} {_plural(expected, 'character')} long (got {length})"
    elif keyword in ("minimum", "maximum") and in_file:
        keyword, msg = "maxSize", f"the file must be at most {_plural(expected, 'byte')}"
    elif keyword == "minimum":
        msg = f"must be at least {_num(expected)}"
    elif keyword == "maximum":
        msg = f"must be at most {_num(expected)}"
    elif keyword == "exclusiveMinimum":
        msg = f"must be greater than {_num(expected)}"
    elif keyword == "exclusiveMaximum":
        msg = f"must be less than {_num(expected)}"
    elif keyword == "multipleOf":
        msg = f"must be a multiple of {_num(expected)}"
    elif keyword == "minItems":
        msg = f"needs at least {_plural(expected, 'choice')} (got {items})"
    elif keyword == "maxItems":
        msg = f"allows at most {_plural(expected, 'choice')} (got {items})"
    elif keyword == "uniqueItems":
        msg = "must not repeat a choice"
    elif keyword == "required":
        exp, msg = True, "the file's name, type and size are required"
    else:  # pragma: no cover - the property schemas use no other keyword
        msg = f"does not satisfy {keyword}"
    return AnswerError(
        field=p.id,
        constraint=keyword,
        expected=exp,
        path=json_pointer(p.id, *where),
        message=f"{f.label}: {msg}.",
        actual_type=jt,
        actual_length=length,
        actual_items=items,
    )


def _ecma_pattern(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` with ECMA-262 semantics where Python differs: ``$`` matches only at
    the very end (Python's also matches before a final newline) and ``\\d``/``\\w`` are ASCII."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "$":
            c = r"\Z"
        out.append(c)
        i += 1
    return re.compile("".join(out), re.ASCII)


def _compare(a: date | datetime, b: date | datetime) -> int:
    if isinstance(a, datetime) and not isinstance(b, datetime):
        a = a.date()
    elif isinstance(b, datetime) and not isinstance(a, datetime):
        b = b.date()
    if (
        isinstance(a, datetime)
        and isinstance(b, datetime)
        and (a.tzinfo is None) != (b.tzinfo is None)
    ):
        a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
    return (a > b) - (a < b)


_URL_CONSTRAINTS: Final = {
    "scheme": "allowedSchemes",
    "loopback": "blockLocalhost",
    "too_long": "maxLength",
    "private": "blockPrivateIPs",
    "link_local": "blockPrivateIPs",
    "site_local": "blockPrivateIPs",
    "cgnat": "blockPrivateIPs",
    "unique_local": "blockPrivateIPs",
    "multicast": "blockPrivateIPs",
    "unspecified": "blockPrivateIPs",
    "broadcast": "blockPrivateIPs",
    "reserved": "blockPrivateIPs",
}
_URL_WORDS: Final = {
    "scheme": "must use https",
    "userinfo": "must not contain a user name or password",
    "host_missing": "needs a host",
    "too_long": "is too long",
    "port": "has an invalid port",
    "malformed": "is not a well-formed URL",
    "zone_id": "must not contain an IPv6 zone id",
    "idn": "must not use an internationalised (punycode) host name",
    "loopback": "must not point at this machine (localhost)",
}


def _extra_errors(compiled: CompiledForm, p: _Plan, value: Any) -> list[AnswerError]:
    """Checks the JSON Schema cannot express, on a value that passed the schema."""
    f = p.field
    if isinstance(f, TextField) and f.validation.pattern is not None:
        if _ecma_pattern(f.validation.pattern).search(value) is None:
            return [
                _error(p, "pattern", f.validation.pattern, value, "does not have the expected form")
            ]
    elif isinstance(f, DateField):
        moment = _parse_moment(value, f.validation.format)
        for name, sign in (("minimum", -1), ("maximum", 1)):
            bound_text = getattr(f.validation, name)
            if moment is None or bound_text is None:
                continue
            bound = _parse_moment(bound_text, f.validation.format)
            if bound is not None and _compare(moment, bound) == sign:
                word = "on or after" if sign < 0 else "on or before"
                return [_error(p, name, bound_text, value, f"must be {word} {bound_text}")]
    elif isinstance(f, UrlField):
        try:
            parsed = parse_url(value, compiled.url_policy)
        except UnsafeURLError as exc:
            constraint = _URL_CONSTRAINTS.get(exc.reason, "format")
            expected: str | bool | tuple[str, ...] = True
            if constraint == "allowedSchemes":
                expected = f.validation.allowed_schemes
            elif constraint in ("format", "maxLength"):
                expected = "uri"
            words = _URL_WORDS.get(exc.reason, "must not point at a private or reserved address")
            return [_error(p, constraint, expected, value, f"{words} [{exc.reason}]")]
        if parsed.scheme not in f.validation.allowed_schemes:
            schemes = ", ".join(f.validation.allowed_schemes)
            return [
                _error(
                    p,
                    "allowedSchemes",
                    f.validation.allowed_schemes,
                    value,
                    f"must use {schemes} [scheme]",
                )
            ]
    elif isinstance(f, FileField) and f.validation.allowed_extensions is not None:
        name = str(value.get("filename", "")).lower()
        if not name.endswith(f.validation.allowed_extensions):
            allowed = ", ".join(f.validation.allowed_extensions)
            return [
                _error(
                    p,
                    "allowedExtensions",
                    f.validation.allowed_extensions,
                    value,
                    f"the file name must end with one of: {allowed}",
                )
            ]
    return []


def _value_errors(compiled: CompiledForm, p: _Plan, value: Any) -> list[AnswerError]:
    """Every error of one field's value (schema, then the extra checks)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [_error(p, "finite", "finite number", value, "must be a finite number")]
    sub = compiled._field_validators[p.id]
    found = [
        _from_jsonschema(p, e.validator, e.validator_value, e.instance, tuple(e.relative_path))
        for e in sub.iter_errors(value)
    ]
    wrong_type = {e.path for e in found if e.constraint == "type"}
    seen: set[tuple[str, str]] = set()
    kept: list[AnswerError] = []
    for e in found:  # a wrong type hides the rest; one error per (place, constraint)
        key = (e.path, e.constraint)
        if key not in seen and (e.constraint == "type" or e.path not in wrong_type):
            seen.add(key)
            kept.append(e)
    return kept or _extra_errors(compiled, p, value)


def _effective(
    compiled: CompiledForm, content: Mapping[str, Any], apply_defaults: bool
) -> tuple[dict[str, Any], set[str]]:
    """The answer as validation sees it (defaults filled, hidden fields removed), and the ids
    of the fields a user sees."""
    work = dict(content)
    for p in compiled._plans:
        if p.field.rendering.hidden:
            work.pop(p.id, None)
        fill = apply_defaults and p.id not in work and p.field.default is not None
        if fill and (not p.field.required or p.field.rendering.hidden):
            work[p.id] = thaw(freeze(p.field.default))
    shown: set[str] = set()
    # Dependency order: a controller's value is final before any field it controls is judged.
    for index in compiled._order:
        p = compiled._plans[index]
        if all(show.holds(work) for show in p.shows):
            if not p.field.rendering.hidden:
                shown.add(p.id)
        else:
            work.pop(p.id, None)
    return work, shown


def visible_fields(
    compiled: CompiledForm, content: Mapping[str, Any], *, apply_defaults: bool = True
) -> tuple[str, ...]:
    """The ids of the fields shown for a (partial) answer, in form order.

    Args:
        compiled: The compiled form.
        content: The values entered so far.
        apply_defaults: Whether absent optional fields take their default first.

    Returns:
        The visible field ids (fields hidden by a condition or ``rendering.hidden`` are left
        out).
    """
    _, shown = _effective(compiled, content, apply_defaults)
    return tuple(p.id for p in compiled._plans if p.id in shown)


def _rule_errors(
    compiled: CompiledForm, work: Mapping[str, Any], bad: set[str]
) -> list[AnswerError]:
    plans = {p.id: p for p in compiled._plans}
    errors: list[AnswerError] = []
    for rule in compiled.form.validation.rules:
        if rule.left in bad or rule.right in bad or rule.left not in work or rule.right not in work:
            continue
        left, right = plans[rule.left], plans[rule.right]
        a, b = work[rule.left], work[rule.right]
        if isinstance(left.field, DateField) and isinstance(right.field, DateField):
            ma = _parse_moment(a, left.field.validation.format)
            mb = _parse_moment(b, right.field.validation.format)
            if ma is None or mb is None:
                continue
            cmp = _compare(ma, mb)
        else:
            cmp = (a > b) - (a < b)
        ok = {
            "lt": cmp < 0,
            "le": cmp <= 0,
            "gt": cmp > 0,
            "ge": cmp >= 0,
            "eq": cmp == 0,
            "ne": cmp != 0,
        }[rule.operator]
        if not ok:
            words = {
                "lt": "less than",
                "le": "at most",
                "gt": "greater than",
                "ge": "at least",
                "eq": "equal to",
                "ne": "different from",
            }[rule.operator]
            text = rule.message or f"must be {words} {right.field.label}"
            expected = f"{rule.left} {rule.operator} {rule.right}"
            err = _error(left, "rule", expected, a, text.rstrip("."))
            errors.append(err)
    return errors


def validate_form_answer(
    compiled: CompiledForm, content: object, *, apply_defaults: bool = True
) -> ValidationResult:
    """Validate an answer against the full rules of a compiled form.

    Fields hidden by a condition (or by ``rendering.hidden``) are treated as absent: a value
    sent for them is dropped, never an error. Unknown keys are an error
    (``additionalProperties``), reported without naming them.

    Args:
        compiled: The compiled form.
        content: ``ElicitResult.content`` as decoded from JSON (or the answer of a hosted page).
        apply_defaults: Fill absent optional fields with their default before validating
            (the defaults take part in conditions).

    Returns:
        A :class:`~erlmcp_py.core.validation.ValidationResult`: on success the visible content
        in form order (integral floats of integer fields as ``int``); otherwise the errors,
        in form order, none of them containing a submitted value.
    """
    if not isinstance(content, Mapping):
        return not_an_object(content)
    by_id = {p.id: p for p in compiled._plans}
    known = by_id.keys()
    unknown = [k for k in content if k not in known]
    work, _ = _effective(compiled, {k: v for k, v in content.items() if k in known}, apply_defaults)

    per_field: dict[str, list[AnswerError]] = {}
    for p in compiled._plans:
        if p.id in work:
            found = _value_errors(compiled, p, work[p.id])
            if found:
                per_field[p.id] = found
    # The whole-answer schema decides what is required (plain and if/then); only values that
    # passed their own field's checks take part, so a bad controller cannot crash it.
    passed = {k: v for k, v in work.items() if k not in per_field}
    for e in compiled._validator.iter_errors(passed):
        if e.validator != "required" or e.relative_path:
            continue  # value errors were collected per field above
        for name in e.validator_value:
            if name not in passed and name in known and name not in per_field:
                plan = by_id[name]
                per_field[name] = [_error(plan, "required", True, _MISSING, "is required")]
    errors: list[AnswerError] = []
    for p in compiled._plans:
        errors.extend(per_field.get(p.id, ()))
    errors.extend(_rule_errors(compiled, work, set(per_field)))
    if unknown:
        errors.append(
            AnswerError(
                field=None,
                constraint="additionalProperties",
                expected=tuple(p.id for p in compiled._plans),
                path="",
                message=(
                    f"The answer has {_plural(len(unknown), 'field')} that the form does not "
                    f"have (its fields: {', '.join(p.id for p in compiled._plans)})."
                ),
                actual_type="object",
                actual_items=len(unknown),
            )
        )
    if errors:
        return ValidationResult(False, None, tuple(errors))
    out: dict[str, Any] = {}
    for p in compiled._plans:
        if p.id in work:
            value = work[p.id]
            if _is_integer_field(p.field) and isinstance(value, float):
                value = int(value)
            out[p.id] = list(value) if isinstance(value, list) else value
    return ValidationResult(True, out, ())
