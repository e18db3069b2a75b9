"""Compiling a form definition, once per protocol version, into a :class:`CompiledForm`.

Theory of operation
-------------------
A form is *defined* once, as data (a dict/JSON from configuration, or the pydantic models of
:mod:`~erlmcp_py.core.forms._fields` and :mod:`~erlmcp_py.core.forms._definition`), and
*compiled* once per protocol version by :func:`compile_form` into a :class:`CompiledForm` that
carries three artefacts:

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
    why and ``requested_schema`` is ``None``. A ``rendering.hidden`` field does not count: it
    is never asked, in either mode.

The property schemas, the wire schema and the sensitivity test come from their own modules;
this one assembles them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic.alias_generators import to_camel

from erlmcp_py.core.errors import FormDefinitionError
from erlmcp_py.core.forms._answers import _value_errors, validate_form_answer
from erlmcp_py.core.forms._conditions import _conditions_of, _Plan, _visibility_order
from erlmcp_py.core.forms._definition import FormDefinition, load_form
from erlmcp_py.core.forms._fields import AnyField, FileField, UrlField
from erlmcp_py.core.forms._jsonschema import (
    _DRAFT_2020_12,
    _FORMAT_CHECKER,
    _required,
    _validation_property,
    _Validator,
)
from erlmcp_py.core.forms._sensitive import sensitive_reason
from erlmcp_py.core.forms._wire import _wire_schema
from erlmcp_py.core.schema import FrozenDict, RequestedSchema, freeze
from erlmcp_py.core.sensitive import DEFAULT_SENSITIVE_NAMES, SensitiveNames
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.core.validation import ValidationResult


@dataclass(frozen=True, slots=True)
class CompiledForm:
    """A form compiled for one protocol version (see :func:`compile_form`).

    Attributes:
        form: The definition.
        version: The protocol version the wire schema is for.
        requested_schema: The checked, frozen wire ``requestedSchema``; ``None`` when the form
            needs URL mode.
        validation_schema: The frozen server-side JSON Schema 2020-12.
        needs_url_mode: Why the form cannot be sent in form mode, or ``None``.
        url_mode_fields: The ids of the fields that force URL mode.
        url_policy: The policy ``url`` fields are checked with.
        hints: Per field id, its rendering hints and conditions as JSON (camelCase), for UIs
            such as hosted URL-mode pages.
    """

    form: FormDefinition
    version: str
    requested_schema: RequestedSchema | None
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
        """The form's ``timeout`` in seconds: ``ctx.elicit`` asks with this deadline unless
        given its own ``timeout=``; the runtime clamps it to its policy's deadline."""
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
    sensitive_names: SensitiveNames = DEFAULT_SENSITIVE_NAMES,
) -> CompiledForm:
    """Compile a form for a protocol version.

    Args:
        form: The definition (see :func:`load_form`).
        version: The negotiated protocol version (``2025-06-18``, ``2025-11-25``,
            ``2026-07-28``); the wire schema is down-levelled to it.
        url_policy: The policy for ``url`` fields; defaults to :class:`UrlPolicy`'s.
        sensitive_names: The name list that makes a field sensitive (the server's policy).

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
    # No format checks on the schema itself: its "regex" format would compile each `pattern`
    # with Python's re as written; patterns are ECMA-262, checked by _pattern already.
    Draft202012Validator.check_schema(validation_schema, format_checker=None)
    validator = _Validator(validation_schema, format_checker=_FORMAT_CHECKER)

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
            p.id: _Validator(properties[p.id], format_checker=_FORMAT_CHECKER) for p in plans
        },
    )
    _check_defaults(compiled)

    reasons: list[str] = []
    url_fields: list[str] = []
    for p in plans:
        if p.field.rendering.hidden:
            continue  # never asked (nor sent on the wire): its value is the server's default
        if isinstance(p.field, FileField):
            reasons.append(f"field {p.id!r} is a file upload, which form mode cannot carry")
            url_fields.append(p.id)
            continue
        why = sensitive_reason(p.field, sensitive_names)
        if why is not None:
            reasons.append(
                f"field {p.id!r} asks for sensitive data ({why}); "
                "the MCP spec requires URL mode for it"
            )
            url_fields.append(p.id)
    if reasons:
        return dataclasses.replace(
            compiled,
            requested_schema=None,
            needs_url_mode="; ".join(reasons),
            url_mode_fields=tuple(url_fields),
        )
    return dataclasses.replace(
        compiled,
        requested_schema=_wire_schema(definition, plans, version, policy),
        needs_url_mode=None,
        url_mode_fields=(),
    )


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
