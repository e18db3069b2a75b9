"""The eight field types of the form language, their rendering hints and their rules.

Separate from the form as a whole (:mod:`~erlmcp_py.core.forms._definition`): these models
check one field at a time; cross-field checks live with the form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Annotated, Final, Literal, TypeAlias

from pydantic import (
    AliasChoices,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from erlmcp_py.core.forms._base import FieldId, NonNegative, Number, Positive, _Model
from erlmcp_py.core.forms._conditions import Condition
from erlmcp_py.core.forms._pattern import ecma_pattern
from erlmcp_py.core.schema import FORMATS
from erlmcp_py.core.urlpolicy import UrlPolicy

#: The eight field types of the language.
FIELD_TYPES: Final = ("text", "number", "boolean", "date", "select", "multi_select", "url", "file")


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
    """Rendering hints. Clients may ignore them; none reaches the wire except
    ``helpText``, which is folded into the property ``description``. ``hidden`` removes the
    field from the wire and ignores any value sent for it (its ``default``, if any, is its
    value in the answer: a hidden input); ``conditionalDisplay`` is a
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
                ecma_pattern(self.pattern)
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
    """Keys every field has, plus conditions and the ``sensitive`` override."""

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
        # Form definitions write `"default": ""` for "no pre-filled text" (even with minLength 3).
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


def _url_max_length(f: UrlField, policy: UrlPolicy) -> int:
    limit = f.validation.max_length
    return policy.max_length if limit is None else min(limit, policy.max_length)
