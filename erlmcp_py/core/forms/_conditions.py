"""Conditional display and requirement: the condition language and its evaluation.

Separate because visibility is one concern crossing the others: definition checks refuse
cycles with it, compilation turns it into ``if``/``then`` schemas, answer validation removes
the fields it hides.

Theory of operation
-------------------
Conditions come from three equivalent places: a field's
``showWhen``/``requiredWhen``, its ``rendering.conditionalDisplay``, and the form's
``validation.dependencies`` (``show``/``enable`` = shown when the condition holds,
``hide``/``disable`` = hidden when it holds, ``require``/``validate`` = required when it holds).
A condition compares the (visible) value of another field: ``equals``, ``not_equals``, ``in``,
``not_in``, ``present``, ``absent``, ``contains`` (multi-select). Cycles are refused.

:func:`_conditions_of` normalises the three places into, per field, what shows it and what
requires it (a :class:`_Plan`); :func:`_visibility_order` sorts the fields so a controller is
judged before the fields it controls; :func:`_effective` applies defaults and removes every
field hidden for an answer (a hidden field is treated as absent, whatever the client sent).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import model_validator

from erlmcp_py.core.forms._base import FieldId, Scalar, _Model
from erlmcp_py.core.schema import freeze, thaw

if TYPE_CHECKING:
    from erlmcp_py.core.forms._compile import CompiledForm
    from erlmcp_py.core.forms._definition import FormDefinition
    from erlmcp_py.core.forms._fields import AnyField


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


# Conditions, normalised: per field, what shows it and what requires it


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


# Visibility of an answer


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
