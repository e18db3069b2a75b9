"""The wire ``requestedSchema`` of a form, down-levelled to a protocol version.

Separate because the wire can carry only the MCP subset (:mod:`erlmcp_py.core.schema`): rules
it cannot carry are left to the server-side schema (:mod:`~erlmcp_py.core.forms._jsonschema`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.forms._conditions import _Plan
from erlmcp_py.core.forms._fields import (
    AnyField,
    BooleanField,
    DateField,
    MultiSelectField,
    NumberField,
    NumberValidation,
    Option,
    SelectField,
    TextField,
    UrlField,
    _option_values,
    _url_max_length,
)
from erlmcp_py.core.schema import (
    FORMATS,
    RequestedSchema,
    boolean_field,
    enum_field,
    integer_field,
    multi_select_field,
    number_field,
    string_field,
)
from erlmcp_py.core.urlpolicy import UrlPolicy

if TYPE_CHECKING:
    from erlmcp_py.core.forms._definition import FormDefinition


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


def _wire_schema(
    form: FormDefinition, plans: Sequence[_Plan], version: str, policy: UrlPolicy
) -> RequestedSchema:
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
    schema = RequestedSchema({"type": "object", "properties": props, "required": required})
    return schema.for_version(version)
