"""Validating an answer against a compiled form.

Theory of operation
-------------------
:func:`validate_form_answer` checks an accepted answer in this order: defaults are filled in
for absent optional fields; conditions are evaluated in dependency order and every field they
hide is removed (a hidden field is treated as absent, whatever the client sent; a
``rendering.hidden`` field then takes its default, like an HTML hidden input); the
``validation_schema`` runs; the checks JSON Schema cannot express
(:mod:`~erlmcp_py.core.forms._extra_checks`) run on every value of the right type, so each
failing constraint of a field is reported (a file too large *and* of a refused extension
gets both errors). Errors are
:class:`~erlmcp_py.core.validation.AnswerError` values
(``field / constraint / expected / path / message``); like every error of the runtime they
never contain the submitted value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from erlmcp_py.core.forms._conditions import _effective, _Plan
from erlmcp_py.core.forms._extra_checks import _extra_errors, _rule_errors
from erlmcp_py.core.forms._fields import AnyField, NumberField
from erlmcp_py.core.forms._messages import _MISSING, _error, _from_jsonschema
from erlmcp_py.core.validation import AnswerError, ValidationResult, not_an_object
from erlmcp_py.core.wording import json_pointer, plural

if TYPE_CHECKING:
    from erlmcp_py.core.forms._compile import CompiledForm


def _is_integer_field(f: AnyField) -> bool:
    return isinstance(f, NumberField) and f.validation.is_integer


def _controlled_by(p: _Plan, fields: set[str]) -> bool:
    """Whether a condition showing or requiring ``p`` reads one of ``fields``."""
    return any(s.condition.field in fields for s in p.shows) or any(
        c.field in fields for c in p.requires_when
    )


def _value_errors(compiled: CompiledForm, p: _Plan, value: Any) -> list[AnswerError]:
    """Every error of one field's value: each failing schema keyword, then each failing
    check JSON Schema cannot express (a file too large *and* of the wrong extension gets
    both errors). A wrong type hides the rest of its place; one error per (place,
    constraint)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [_error(p, "finite", "finite number", value, "must be a finite number")]
    sub = compiled._field_validators[p.id]
    found = [
        _from_jsonschema(p, e.validator, e.validator_value, e.instance, tuple(e.relative_path))
        for e in sub.iter_errors(value)
    ]
    wrong_type = {e.path for e in found if e.constraint == "type"}
    if json_pointer(p.id) not in wrong_type:  # the extra checks need a value of the right type
        found.extend(_extra_errors(compiled, p, value, wrong_type))
    seen: set[tuple[str, str]] = set()
    kept: list[AnswerError] = []
    for e in found:
        key = (e.path, e.constraint)
        if key not in seen and (e.constraint == "type" or e.path not in wrong_type):
            seen.add(key)
            kept.append(e)
    return kept


def validate_form_answer(
    compiled: CompiledForm, content: object, *, apply_defaults: bool = True
) -> ValidationResult:
    """Validate an answer against the full rules of a compiled form.

    Fields hidden by a condition (or by ``rendering.hidden``) are treated as absent: a value
    sent for them is dropped, never an error. A ``rendering.hidden`` field is never asked but
    still submitted, like an HTML hidden input: its ``default``, when it has one, is its value
    (``hidden`` is a rendering hint, and every absent field takes its default). Unknown keys
    are an error (``additionalProperties``), reported without naming them.

    Args:
        compiled: The compiled form.
        content: ``ElicitResult.content`` as decoded from JSON (or the answer of a hosted page).
        apply_defaults: Fill absent optional fields with their default before validating
            (the defaults take part in conditions).

    Returns:
        A :class:`~erlmcp_py.core.validation.ValidationResult`: on success the content in form
        order -- the values of the fields shown, plus the defaults of ``rendering.hidden``
        fields (integral floats of integer fields as ``int``); otherwise the errors, in form
        order, none of them containing a submitted value.
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
    # passed their own field's checks take part, so a bad controller cannot crash it. A field
    # whose requirement depends on such a controller is not judged: without the controller's
    # value a condition like ``not_equals`` would hold and report a spurious "is required".
    bad = set(per_field)
    passed = {k: v for k, v in work.items() if k not in bad}
    for e in compiled._validator.iter_errors(passed):
        if e.validator != "required" or e.relative_path:
            continue  # value errors were collected per field above
        for name in e.validator_value:
            if name not in passed and name in known and name not in per_field:
                plan = by_id[name]
                if not _controlled_by(plan, bad):
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
                    f"The answer has {plural(len(unknown), 'field')} that the form does not "
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
