"""Forms from Python types: a type -> a checked requestedSchema + a parser back to the type.

Theory of operation
-------------------
:func:`schema_for` looks a type up in a dict keyed by the type object; on a miss it renders the
type once into a :class:`FormType`: the wire schema (newest dialect, checked, frozen), its
compiled validator, and one converter per field. Afterwards ``schema_for(T)`` is a dict lookup.

Record types give one form field per field: pydantic models (``model_fields``, aliases are the
wire names), dataclasses (``init`` fields) and TypedDicts of ``typing`` or ``typing_extensions``
(``Required``/``NotRequired``/``total``). Any other supported type is a *bare* answer, wrapped
as one field named ``value`` and unwrapped again by :meth:`FormType.parse`.

========================================  ===================================================
Python field type                         form field
========================================  ===================================================
``str`` / ``int`` / ``float`` / ``bool``  string / integer / number / boolean
``datetime.date`` / ``datetime.datetime`` string with ``format`` date / date-time (parsed)
``Annotated[str, Format("email")]``       string with ``format`` email (or uri)
``pydantic.SecretStr`` / ``SecretBytes``  string, sensitive: asked on the hosted page only
``Literal["a", "b"]``                     single-select (``enum``)
``Enum`` / ``StrEnum``                    single-select of the member values (member names
                                          when a value is not a string); parsed to the member
``Annotated[E, Titles(...)]``             titled single-select (``oneOf`` of {const, title})
``list[Literal]`` / ``list[Enum]``        multi-select (titled with ``Titles``)
``T | None`` / ``Optional[T]``            the field is not required; missing -> ``None``
``Ge``/``Le``/``Interval``/``MinLen``/    ``minimum``/``maximum``/``minLength``/``maxLength``
``MaxLen``/``Len``, pydantic ``Field``    (``minItems``/``maxItems`` on lists); ``Field``'s
                                          ``title``, ``description`` and ``default`` too
========================================  ===================================================

Every field has a ``title``: its ``Field(title=...)``, else its wire name (a pydantic alias,
else the attribute) as a label (``spent_on`` -> "Spent on", ``api_key`` -> "API key").

A field with a default (or ``default_factory``) is not required; a default that JSON can carry
becomes the wire ``default`` (SEP-1034). Anything else -- nested models, ``dict``, ``set``,
``tuple``, ``list[str]``, unions of two types, exclusive float bounds, ``pattern``,
``multiple_of`` -- fails at definition time with a ``TypeError`` naming the field and the
reason, never at the time a user is asked.

The type's own validators are part of the form: a model's ``field_validator`` and
``model_validator``, ``Annotated[..., AfterValidator(...)]`` on a field or a bare type, a
dataclass's validators and ``__post_init__``. :meth:`FormType.validate` checks an answer
strictly against the wire schema, then converts it to the type through pydantic (a model's
``model_validate``; a ``TypeAdapter`` for every other type), which runs them: a refusal
(``ValueError``, ``AssertionError``, ``PydanticCustomError`` in a validator) is an invalid
answer, its message the validator's (pydantic's "Value error, " prefix removed), located by
its ``loc``; anything else a validator raises is a bug and propagates. A valid answer's
result carries the instance (:class:`ParsedAnswer`), so the validators run once per answer.
A ``typing.TypedDict`` that pydantic cannot validate (before Python 3.12) is built as a plain
dict, and fails at definition time if a field carries a validator.

Pure: no I/O; pydantic reads model fields and builds instances.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, Literal, TypeVar, Union, overload

import annotated_types as at
import pydantic
import typing_extensions
from pydantic.fields import FieldInfo
from pydantic.functional_validators import (
    AfterValidator,
    BeforeValidator,
    PlainValidator,
    WrapValidator,
)
from pydantic_core import PydanticUndefined

from erlmcp_py.core.errors import InvalidAnswer, SchemaNotAllowed
from erlmcp_py.core.schema import (
    RequestedSchema,
    object_schema,
)
from erlmcp_py.core.validation import (
    AnswerError,
    CompiledValidator,
    ValidationResult,
    compile_validator,
    summarize,
)
from erlmcp_py.core.versions import LATEST_VERSION
from erlmcp_py.core.wording import field_title, json_pointer

__all__ = ["FormType", "Format", "ParsedAnswer", "Titles", "schema_for"]

T = TypeVar("T")

#: The field name of a wrapped bare answer.
VALUE_FIELD: Final = "value"


@dataclasses.dataclass(frozen=True, slots=True)
class Format:
    """``Annotated[str, Format("email")]``: a string field with an MCP ``format``.

    Attributes:
        name: ``email``, ``uri``, ``date`` or ``date-time``.
    """

    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class Titles:
    """``Annotated[Color, Titles({...})]``: make a select titled (``oneOf``/``anyOf``).

    Attributes:
        titles: Wire value -> display title, covering every option. ``None`` (only for
            enums) derives titles from member names (``NORTH_EAST`` -> ``North East``).
    """

    titles: Mapping[str, str] | None = None


# --------------------------------------------------------------------------------------------
# Field analysis
# --------------------------------------------------------------------------------------------


class _Unsupported(Exception):
    """Why a field type cannot be a form field (becomes a TypeError naming the field)."""


Convert = Callable[[Any], Any]


def _identity(v: Any) -> Any:
    return v


def _to_int(v: Any) -> Any:
    return int(v)


def _to_float(v: Any) -> Any:
    return float(v)


def _to_date(v: Any) -> Any:
    return dt.date.fromisoformat(v)


def _to_datetime(v: Any) -> Any:
    return dt.datetime.fromisoformat(v.upper())


@dataclasses.dataclass(slots=True)
class _Analysis:
    """What one annotation means as a form field."""

    prop: dict[str, Any]
    convert: Convert
    to_wire: Convert  # Python default -> wire default
    optional: bool = False
    default: Any = PydanticUndefined


def _strip_annotated(tp: Any, meta: list[Any]) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        meta.extend(tp.__metadata__)
        tp = tp.__origin__
    return tp


def _flatten(meta: list[Any]) -> list[Any]:
    out: list[Any] = []
    for m in meta:
        if isinstance(m, FieldInfo):
            out.append(m)
            out.extend(_flatten(list(m.metadata)))
        elif isinstance(m, at.GroupedMetadata):
            out.extend(_flatten(list(m)))
        else:
            out.append(m)
    return out


def _name_of(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else repr(tp)


def _select_options(tp: Any) -> tuple[list[str], dict[str, Any], Convert, Convert]:
    """Options of a Literal or Enum: (wire values, wire -> python, convert, python -> wire)."""
    if typing.get_origin(tp) is Literal:
        values = typing.get_args(tp)
        if not values or any(type(v) is not str for v in values):
            raise _Unsupported("a Literal is a select only when all its values are strings")
        return list(values), {v: v for v in values}, _identity, _identity
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = list(tp)
        if not members:
            raise _Unsupported(f"enum {tp.__name__} has no members")
        by_value = all(type(m.value) is str for m in members)
        wire = {(m.value if by_value else m.name): m for m in members}
        back = {m: w for w, m in wire.items()}

        def to_wire(v: Any) -> Any:
            if v not in back:
                raise _Unsupported(f"default {v!r} is not a member of {tp.__name__}")
            return back[v]

        return list(wire), wire, wire.__getitem__, to_wire
    raise _Unsupported("not a Literal or an Enum")


def _titles_for(tp: Any, marker: Titles, values: list[str], wire: dict[str, Any]) -> list[str]:
    if marker.titles is None:
        if not (isinstance(tp, type) and issubclass(tp, enum.Enum)):
            raise _Unsupported("Titles() without a mapping needs an Enum")
        return [wire[v].name.replace("_", " ").title() for v in values]
    missing = [v for v in values if v not in marker.titles]
    extra = [k for k in marker.titles if k not in wire]
    if missing or extra:
        raise _Unsupported(
            f"Titles must cover exactly the options (missing {missing}, unknown {extra})"
        )
    return [marker.titles[v] for v in values]


_DOC: Final = ("title", "description")


def _apply_meta(prop: dict[str, Any], meta: list[Any], kind: str, integral: bool) -> Any:
    """Fold constraint metadata into ``prop``; return a ``FieldInfo`` default if any."""
    default: Any = PydanticUndefined
    sized = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems")}.get(kind)
    for m in meta:
        if isinstance(m, (Format, Titles)):
            continue  # handled by the caller
        if isinstance(m, FieldInfo):
            for key in _DOC:
                value = getattr(m, key)
                if value is not None:
                    prop[key] = value
            if m.default is not PydanticUndefined:
                default = m.default
            continue
        if isinstance(m, at.DocInfo):
            prop["description"] = m.documentation
        elif isinstance(m, (at.Ge, at.Le, at.Gt, at.Lt)):
            if kind not in ("number", "integer"):
                raise _Unsupported(f"{type(m).__name__} applies to numbers only")
            if isinstance(m, at.Ge):
                prop["minimum"] = m.ge
            elif isinstance(m, at.Le):
                prop["maximum"] = m.le
            elif integral and type(getattr(m, "gt", getattr(m, "lt", None))) is int:
                # An exclusive integer bound is an inclusive one, one step in.
                if isinstance(m, at.Gt):
                    prop["minimum"] = m.gt + 1  # type: ignore[operator]
                else:
                    prop["maximum"] = m.lt - 1  # type: ignore[operator]
            else:
                raise _Unsupported(
                    "exclusive bounds (gt/lt) cannot be expressed in an MCP requestedSchema; "
                    "use ge/le"
                )
        elif isinstance(m, (at.MinLen, at.MaxLen)):
            if sized is None:
                raise _Unsupported(f"{type(m).__name__} applies to strings and lists only")
            if isinstance(m, at.MinLen):
                prop[sized[0]] = m.min_length
            else:
                prop[sized[1]] = m.max_length
        elif type(m).__name__ == "_PydanticGeneralMetadata":
            keys = sorted(k for k in vars(m) if k != "strict")
            if keys:
                raise _Unsupported(
                    f"pydantic constraint(s) {', '.join(keys)} cannot be expressed in an MCP "
                    "requestedSchema (it has no pattern, multipleOf or transformations)"
                )
        elif isinstance(m, at.BaseMetadata):
            if type(m).__name__ == "Strict":
                continue  # answers are validated strictly anyway
            raise _Unsupported(
                f"the constraint {m!r} cannot be expressed in an MCP requestedSchema"
            )
        # Anything else (documentation strings, foreign markers) carries no constraint.
    return default


def _scalar(tp: Any, meta: list[Any]) -> tuple[dict[str, Any], Convert, Convert]:
    """A non-list, non-optional field type -> (property, wire -> python, python -> wire)."""
    formats = [m.name for m in meta if isinstance(m, Format)]
    titles = [m for m in meta if isinstance(m, Titles)]
    if formats and tp is not str:
        raise _Unsupported("Format(...) applies to str fields only")
    if titles and not (
        typing.get_origin(tp) is Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum))
    ):
        raise _Unsupported("Titles(...) applies to Literal and Enum fields only")
    if tp is bool:
        return {"type": "boolean"}, _identity, _identity
    if typing.get_origin(tp) is Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
        values, wire, convert, to_wire = _select_options(tp)
        if titles:
            names = _titles_for(tp, titles[0], values, wire)
            oneof = [{"const": v, "title": t} for v, t in zip(values, names, strict=True)]
            return {"type": "string", "oneOf": oneof}, convert, to_wire
        return {"type": "string", "enum": values}, convert, to_wire
    if tp is int:
        return {"type": "integer"}, _to_int, _identity
    if tp is float:
        return {"type": "number"}, _to_float, _identity
    if tp is str:
        prop: dict[str, Any] = {"type": "string"}
        if formats:
            prop["format"] = formats[-1]
        return prop, _identity, _identity
    if tp is dt.datetime:
        return {"type": "string", "format": "date-time"}, _to_datetime, _datetime_to_wire
    if tp is dt.date:
        return {"type": "string", "format": "date"}, _to_date, _date_to_wire
    if tp is pydantic.SecretStr or tp is pydantic.SecretBytes:
        # A secret: asked only on the hosted page (core/sensitive.py), never in form mode.
        return {"type": "string"}, _SECRETS[tp], _no_secret_default
    raise _Unsupported(_why_not(tp))


_SECRETS: Final[dict[Any, Convert]] = {
    pydantic.SecretStr: pydantic.SecretStr,
    pydantic.SecretBytes: lambda v: pydantic.SecretBytes(v.encode()),
}


def _no_secret_default(v: Any) -> Any:
    raise _Unsupported("a secret field cannot have a default (it would be shown to the user)")


def _date_to_wire(v: Any) -> Any:
    if type(v) is not dt.date:
        raise _Unsupported(f"default {v!r} is not a date")
    return v.isoformat()


def _datetime_to_wire(v: Any) -> Any:
    if not isinstance(v, dt.datetime) or v.tzinfo is None:
        raise _Unsupported("a datetime default must be timezone-aware (RFC 3339 needs an offset)")
    return v.isoformat()


def _why_not(tp: Any) -> str:
    origin = typing.get_origin(tp) or tp
    if isinstance(tp, type) and (
        issubclass(tp, pydantic.BaseModel)
        or dataclasses.is_dataclass(tp)
        or typing_extensions.is_typeddict(tp)
    ):
        return f"nested {_name_of(tp)} is not allowed: an MCP form is flat (no nesting)"
    if origin in (dict, Mapping) or origin is typing.Mapping:
        return "dict fields are not allowed: an MCP form is flat (no nesting)"
    if origin in (set, frozenset):
        return "sets are not supported; use list[Literal[...]] or list[SomeEnum] (multi-select)"
    if origin is tuple:
        return "tuples are not supported; MCP has no fixed-length arrays"
    if origin is list:
        return "list fields must be list[Literal[...]] or list[SomeEnum] (multi-select)"
    if tp is bytes or tp is bytearray:
        return "bytes cannot be typed into a form (files are not MCP form fields)"
    if tp is typing.Any or tp is object:
        return "Any/object says nothing a form can render; use a concrete type"
    if tp is type(None):
        return "None alone is not a field type"
    return (
        f"{_name_of(tp)} is not a supported form field type (str, int, float, bool, date, "
        "datetime, Literal, Enum, list of Literal/Enum, optionally Optional/Annotated)"
    )


def _analyze(annotation: Any) -> _Analysis:
    meta: list[Any] = []
    tp = _strip_annotated(annotation, meta)
    optional = False
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == len(typing.get_args(tp)) or len(args) != 1:
            raise _Unsupported(
                "unions are not supported (a form field has one type); only Optional[T] / "
                "T | None is"
            )
        optional = True
        tp = _strip_annotated(args[0], meta)
    meta = _flatten(meta)
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp) or (typing.Any,)
        item_meta: list[Any] = []
        item = _strip_annotated(item, item_meta)
        item_meta = _flatten(item_meta)
        try:
            values, wire, convert_one, to_wire_one = _select_options(item)
        except _Unsupported:
            raise _Unsupported(_why_not(tp)) from None
        titles = [m for m in [*meta, *item_meta] if isinstance(m, Titles)]
        prop: dict[str, Any] = {"type": "array"}
        default = _apply_meta(prop, meta, "array", integral=False)
        if titles:
            names = _titles_for(item, titles[0], values, wire)
            any_of = [{"const": v, "title": t} for v, t in zip(values, names, strict=True)]
            prop["items"] = {"anyOf": any_of}
        else:
            prop["items"] = {"type": "string", "enum": values}

        def convert_list(v: Any) -> Any:
            return [convert_one(x) for x in v]

        def to_wire_list(v: Any) -> Any:
            if not isinstance(v, (list, tuple)):
                raise _Unsupported(f"default {v!r} of a multi-select must be a list")
            return [to_wire_one(x) for x in v]

        return _Analysis(_ordered(prop), convert_list, to_wire_list, optional, default)
    prop, convert, to_wire = _scalar(tp, meta)
    default = _apply_meta(prop, meta, prop["type"], integral=tp is int)
    return _Analysis(_ordered(prop), convert, to_wire, optional, default)


_ORDER: Final = {
    k: i
    for i, k in enumerate(
        (
            "type",
            "title",
            "description",
            "minLength",
            "maxLength",
            "format",
            "minimum",
            "maximum",
            "minItems",
            "maxItems",
            "enum",
            "oneOf",
            "items",
            "default",
        )
    )
}


def _ordered(prop: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(prop.items(), key=lambda kv: _ORDER.get(kv[0], 99)))


# --------------------------------------------------------------------------------------------
# Form types
# --------------------------------------------------------------------------------------------

_MISSING_NONE: Final = "none"  # pass None when the answer lacks the field
_MISSING_OMIT: Final = "omit"  # leave it out (the type's own default applies)


@dataclasses.dataclass(frozen=True, slots=True)
class _Spec:
    wire: str
    attr: str
    convert: Convert
    missing: str


class FormType(Generic[T]):
    """A Python type rendered as an elicitation form. Get one with :func:`schema_for`.

    Attributes:
        type: The Python type.
        schema: The requestedSchema in the newest dialect (a checked, frozen
            :class:`~erlmcp_py.core.schema.RequestedSchema`).
        validator: Its compiled validator.
        wrapped: ``True`` when the type is a bare answer wrapped as the field ``value``.
    """

    __slots__ = (
        "_build",
        "_by_version",
        "_specs",
        "schema",
        "type",
        "validator",
        "wrapped",
    )

    def __init__(
        self,
        tp: Any,
        schema: RequestedSchema,
        specs: tuple[_Spec, ...],
        build: Callable[[dict[str, Any]], Any],
        wrapped: bool,
    ) -> None:
        self.type = tp
        self.schema = schema
        self.validator: CompiledValidator = compile_validator(schema)
        self.wrapped = wrapped
        self._specs = specs
        self._build = build
        self._by_version: dict[str, RequestedSchema] = {}

    def __repr__(self) -> str:
        return f"<FormType {_name_of(self.type)} fields={list(self.validator.field_names)}>"

    def requested_schema(self, version: str = LATEST_VERSION) -> RequestedSchema:
        """The requestedSchema to send to a client of ``version`` (built once per version).

        Raises:
            SchemaNotAllowed: the form cannot be expressed for ``version`` (a multi-select
                for a 2025-06-18 client).
            ValueError: unknown ``version``.
        """
        found = self._by_version.get(version)
        if found is None:
            found = self._by_version[version] = self.schema.for_version(version)
        return found

    def validate(self, content: object) -> ValidationResult:
        """Validate an answer: strictly against the wire schema (see
        :func:`~erlmcp_py.core.validation.validate_answer`), then by the type's own validators,
        which run as the answer is converted to the type.

        Returns:
            A :class:`ParsedAnswer` (``answer``: the instance) when valid; otherwise a
            refused :class:`~erlmcp_py.core.validation.ValidationResult` whose errors are the
            schema's, or the type's validators' (constraint ``model``, their messages).

        Raises:
            Exception: whatever a validator of the type raised that is not a refusal (a bug
                in it): the runtime ends that one elicitation ``Failed("validator_error")``.
        """
        result = self.validator.validate(content)
        if not result.ok or result.content_with_defaults is None:
            return result
        try:
            value = self.from_valid(result.content_with_defaults)
        except InvalidAnswer as refused:
            return ValidationResult(False, None, tuple(refused.errors))  # type: ignore[arg-type]
        return ParsedAnswer(True, result.content_with_defaults, (), value)

    def parse(self, content: object) -> T:
        """Validate ``content`` (:meth:`validate`) and return it as an instance of the type.

        Returns:
            A model / dataclass instance, a TypedDict ``dict``, or for a bare type the value
            (an ``Enum`` member, a ``date``, ``None`` for an unanswered optional, ...).

        Raises:
            InvalidAnswer: the answer does not match the form, or the type's own validators
                refused it; ``errors`` are :class:`~erlmcp_py.core.validation.AnswerError`
                values (no submitted value, but what a validator's message says).
        """
        result = self.validate(content)
        if not isinstance(result, ParsedAnswer):
            raise InvalidAnswer(result.errors, summarize(result.errors))
        value: T = result.value
        return value

    def from_valid(self, content: Mapping[str, Any]) -> T:
        """Convert an answer that passed the wire schema (``content_with_defaults``) to the
        type, running its own validators (:meth:`validate` does both).

        Raises:
            InvalidAnswer: the type's own validators (e.g. pydantic ``field_validator``)
                refused the answer.
        """
        values: dict[str, Any] = {}
        for spec in self._specs:
            if spec.wire in content:
                values[spec.attr] = spec.convert(content[spec.wire])
            elif spec.missing == _MISSING_NONE:
                values[spec.attr] = None
        result: T = self._build(values)
        return result


@dataclasses.dataclass(frozen=True, slots=True)
class ParsedAnswer(ValidationResult):
    """A valid answer to a typed form (:meth:`FormType.validate`), with the instance of the
    type it became.

    Attributes:
        value: The instance (a model, a dataclass, a TypedDict's dict, a bare value).
    """

    value: Any = None

    @property
    def answer(self) -> Any:
        """The instance: what the ``Accepted`` outcome carries."""
        return self.value


#: pydantic's words in front of a validator's own message.
_PREFIXES: Final = ("Value error, ", "Assertion failed, ")

#: What marks a pydantic validator on an ``Annotated`` type.
_VALIDATORS: Final = (AfterValidator, BeforeValidator, PlainValidator, WrapValidator)


def _refusal(field: str | None, path: str, kind: str, text: str) -> AnswerError:
    """A validator's refusal as an answer error: its own text, at its place."""
    for prefix in _PREFIXES:
        text = text.removeprefix(prefix)
    text = text.strip() or kind
    if not text.endswith((".", "!", "?")):
        text += "."
    return AnswerError(
        field=field,
        constraint="model",
        expected=kind,
        path=path,
        message=f"{field}: {text}" if field else text,
    )


def _invalid_from_pydantic(
    exc: pydantic.ValidationError, where: tuple[str, ...] = ()
) -> InvalidAnswer:
    """The type's own validators refused the answer: report where and what they said, never
    the input. ``where`` prefixes each location (a bare type's answer is the field
    ``value``)."""
    errors = []
    for e in exc.errors(include_input=False, include_url=False, include_context=False):
        loc = (*where, *e["loc"])
        field = str(loc[0]) if loc else None
        errors.append(_refusal(field, json_pointer(*loc), e["type"], e["msg"]))
    found = tuple(errors)
    return InvalidAnswer(found, summarize(found))


def _invalid_from_error(exc: ValueError | AssertionError, where: tuple[str, ...]) -> InvalidAnswer:
    """A refusal raised by a constructor pydantic does not run (``__post_init__``)."""
    kind = "assertion_error" if isinstance(exc, AssertionError) else "value_error"
    field = where[0] if where else None
    found = (_refusal(field, json_pointer(*where), kind, str(exc)),)
    return InvalidAnswer(found, summarize(found))


def _record_fields(tp: Any) -> list[tuple[str, str, Any, Any, str, bool]]:
    """(wire name, attribute, annotation, python default, missing policy, key required)."""
    out = []
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        for attr, info in tp.model_fields.items():
            wire = info.alias if isinstance(info.alias, str) else attr
            annotation: Any = info.annotation
            if info.metadata:
                annotation = typing.Annotated[(annotation, *info.metadata)]
            doc = FieldInfo(title=info.title, description=info.description)
            annotation = typing.Annotated[annotation, doc]
            has_default = not info.is_required()
            default = info.default if info.default is not PydanticUndefined else PydanticUndefined
            missing = _MISSING_OMIT if has_default else _MISSING_NONE
            out.append((wire, attr, annotation, default, missing, not has_default))
        return out
    hints = typing.get_type_hints(tp, include_extras=True)
    if dataclasses.is_dataclass(tp):
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            annotation = hints[f.name]
            doc_meta = {k: f.metadata[k] for k in _DOC if k in f.metadata}
            if doc_meta:
                annotation = typing.Annotated[annotation, FieldInfo(**doc_meta)]
            has_default = (
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            )
            default = f.default if f.default is not dataclasses.MISSING else PydanticUndefined
            missing = _MISSING_OMIT if has_default else _MISSING_NONE
            out.append((f.name, f.name, annotation, default, missing, not has_default))
        return out
    total = getattr(tp, "__total__", True)
    for key, annotation in hints.items():
        origin = typing.get_origin(annotation)
        required = total
        if origin is typing.Required:
            required, annotation = True, typing.get_args(annotation)[0]
        elif origin is typing.NotRequired:
            required, annotation = False, typing.get_args(annotation)[0]
        missing = _MISSING_NONE if required else _MISSING_OMIT
        out.append((key, key, annotation, PydanticUndefined, missing, required))
    return out


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and (
        issubclass(tp, pydantic.BaseModel)
        or dataclasses.is_dataclass(tp)
        or typing_extensions.is_typeddict(tp)
    )


def _render(tp: Any) -> FormType[Any]:
    record = _is_record(tp)
    rows = (
        _record_fields(tp)
        if record
        else [(VALUE_FIELD, VALUE_FIELD, tp, PydanticUndefined, _MISSING_NONE, True)]
    )
    where = _name_of(tp)
    props: dict[str, dict[str, Any]] = {}
    required: list[str] = []
    specs: list[_Spec] = []
    for wire, attr, annotation, py_default, missing, key_required in rows:
        label = f"{where}: field {wire!r}" if record else where
        try:
            a = _analyze(annotation)
            default = a.default if py_default is PydanticUndefined else py_default
            if default is not PydanticUndefined and default is not None:
                a.prop["default"] = a.to_wire(default)
            if key_required and not a.optional and default is PydanticUndefined:
                required.append(wire)
            if "title" not in a.prop:  # a client labels the field with it, not the wire name
                a.prop["title"] = field_title(wire)
            props[wire] = object_schema({wire: _ordered(a.prop)})["properties"][wire]
        except (_Unsupported, SchemaNotAllowed) as exc:
            raise TypeError(f"{label}: {exc}") from None
        specs.append(_Spec(wire, attr, a.convert, missing))
    if not props:
        raise TypeError(
            f"{where}: a form needs at least one field (MCP clients cannot render an empty form)"
        )
    schema = RequestedSchema({"type": "object", "properties": props, "required": required})
    annotations = [annotation for _, _, annotation, _, _, _ in rows]
    build = _builder(tp, record, specs, annotations)
    return FormType(tp, schema, tuple(specs), build, wrapped=not record)


def _builder(
    tp: Any, record: bool, specs: list[_Spec], annotations: list[Any]
) -> Callable[[dict[str, Any]], Any]:
    """How converted field values become an instance of ``tp``, through pydantic, which runs
    the type's own validators (a refusal raises ``InvalidAnswer``)."""
    if record and issubclass(tp, pydantic.BaseModel):
        model: type[pydantic.BaseModel] = tp
        wire_of = {spec.attr: spec.wire for spec in specs}
        renamed = any(spec.attr != spec.wire for spec in specs)

        def build_model(values: dict[str, Any]) -> Any:
            data = {wire_of[k]: v for k, v in values.items()} if renamed else values
            try:
                return model.model_validate(data)
            except pydantic.ValidationError as exc:
                raise _invalid_from_pydantic(exc) from None

        return build_model
    where = () if record else (VALUE_FIELD,)
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(tp)
    except (pydantic.PydanticUserError, NameError) as exc:
        # pydantic cannot validate this type (a typing.TypedDict before Python 3.12): it is
        # built as it is, and a validator on it would never run.
        if any(_has_validator(a) for a in annotations):
            raise TypeError(
                f"{_name_of(tp)}: its fields carry validators pydantic cannot run on it "
                f"({exc}); the answer would not be checked by them (declare a TypedDict "
                "with typing_extensions.TypedDict)"
            ) from None
        if not record:
            return lambda values: values.get(VALUE_FIELD)
        factory = typing.cast(Callable[..., Any], tp)

        def build_plain(values: dict[str, Any]) -> Any:
            try:
                return factory(**values)
            except pydantic.ValidationError as refused:
                raise _invalid_from_pydantic(refused) from None
            except (ValueError, AssertionError) as refused:  # __post_init__'s refusal
                raise _invalid_from_error(refused, where) from None

        return build_plain

    def build(values: dict[str, Any]) -> Any:
        try:
            return adapter.validate_python(values if record else values.get(VALUE_FIELD))
        except pydantic.ValidationError as exc:
            raise _invalid_from_pydantic(exc, where) from None

    return build


def _has_validator(annotation: Any) -> bool:
    """Whether a field's annotation carries a pydantic validator (``AfterValidator`` …)."""
    meta: list[Any] = []
    tp = _strip_annotated(annotation, meta)
    for arg in typing.get_args(tp):
        _strip_annotated(arg, meta)
    return any(isinstance(m, _VALIDATORS) for m in _flatten(meta))


_CACHE: dict[Any, FormType[Any]] = {}


@overload
def schema_for(tp: type[T]) -> FormType[T]: ...
@overload
def schema_for(tp: Any) -> FormType[Any]: ...
def schema_for(tp: Any) -> FormType[Any]:
    """Render a Python type as a form, once; later calls are a dict lookup.

    Args:
        tp: A pydantic model, dataclass or TypedDict (one field per field), or a bare field
            type (``int``, ``Literal[...]``, ``SomeEnum``, ``date``, ``list[SomeEnum]``,
            ``Optional[...]``, ``Annotated[...]``) wrapped as the single field ``value``.

    Returns:
        The :class:`FormType`: wire schema, validator and parser.

    Raises:
        TypeError: the type (or one of its fields, named in the message) cannot be an MCP
            form field, and why.
    """
    try:
        return _CACHE[tp]
    except KeyError:
        pass
    except TypeError:  # unhashable (e.g. Annotated with unhashable metadata): not cached
        return _render(tp)
    return _CACHE.setdefault(tp, _render(tp))
