"""A whole form definition: form-level rules, the checks across fields, and loading.

Separate from the field models because its checks need every field at once (duplicate ids,
unknown or cyclic condition targets, comparable cross-field rules); :func:`load_form` turns
pydantic's errors into one :class:`~erlmcp_py.core.errors.FormDefinitionError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, StrictBool, StrictStr, ValidationError, model_validator

from erlmcp_py.core.errors import FormDefinitionError
from erlmcp_py.core.forms._base import FieldId, Positive, _Model
from erlmcp_py.core.forms._conditions import Condition, _conditions_of, _visibility_order
from erlmcp_py.core.forms._fields import (
    FIELD_TYPES,
    AnyField,
    BooleanField,
    FieldDefinition,
    MultiSelectField,
    NumberField,
    SelectField,
    _option_values,
)


class Dependency(_Model):
    """A form-level dependency: ``action`` when ``condition`` holds."""

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
    """A whole form.

    Attributes:
        id: Unique form id.
        title: Title shown to the user (the elicitation message starts with it).
        description: Optional longer text.
        fields: The fields, in display order (at least one, at most 100).
        validation: Form-level dependencies and cross-field rules.
        metadata: Free JSON for the application.
        timeout: The question's deadline in milliseconds (``ctx.elicit`` asks with it; the
            runtime clamps it to its policy's deadline and warns at the same proportion).
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


def load_form(data: FormDefinition | Mapping[str, Any] | str | bytes) -> FormDefinition:
    """Validate a form definition given as a dict, JSON text or a model.

    Args:
        data: The definition (camelCase keys, or snake_case).

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
