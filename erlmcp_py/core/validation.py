"""Strict validation of form answers against the requestedSchema that was sent.

Theory of operation
-------------------
:func:`compile_validator` turns a requestedSchema (a checked
:class:`~erlmcp_py.core.schema.RequestedSchema`, or a raw schema, checked then) into a
:class:`CompiledValidator`, once: every property gets a jsonschema Draft 2020-12 validator for its
constraint keywords, with a format checker that enforces exactly ``email``, ``uri``, ``date``
and ``date-time`` (:data:`~erlmcp_py.core.schema.FORMATS`). Compiled validators live in a
bounded LRU (:class:`ValidatorCache`) keyed by the SHA-256 of the schema's canonical JSON; a
frozen schema carries that digest, so a cache hit costs a dict lookup.

Validating an answer walks the form's fields in order:

* the answer must be a JSON object; keys that are not fields are an error
  (``additionalProperties: false``); required fields must be present;
* each present value is judged by its field's JSON Schema, strictly. There is no coercion:
  ``"36"`` is not 36, ``"yes"`` is not ``true``, ``true`` is not 1 (a ``bool`` is never a
  number). An integer-valued float (``3.0``) is an integer, as JSON Schema says, and is
  returned as ``3``. NaN and the infinities are refused (JSON has no such numbers);
* missing optional fields get their ``default``; the completed answer is returned.

Each present value is judged by its field's jsonschema Draft 2020-12 validator, and every
:class:`AnswerError` is built from jsonschema's errors. The ``type`` keyword is checked natively
in front of it, with jsonschema's semantics for decoded JSON. A titled single-select (``oneOf``
of ``{const, title}``) is checked as the equivalent ``enum`` of its consts (reported as
``oneOf``); a multi-select as an array (``minItems``/``maxItems``, ``uniqueItems``) and then
item by item (reported as ``enum``/``anyOf`` at ``/field/i``). A property test checks that
this always agrees with one jsonschema run over the whole answer
(``additionalProperties: false``), except that NaN and the infinities are refused.

Errors are :class:`AnswerError` values: field, constraint keyword, what was expected, a JSON
pointer, a message -- and about the value only its JSON type, its length or its item count.
**No error ever contains the submitted value**, nor the name of an unexpected key (either may
be a secret the user pasted in the wrong field).

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator, FormatChecker  # type: ignore[import-untyped]

from erlmcp_py.core.i18n import DEFAULT_LOCALE, Texts
from erlmcp_py.core.schema import (
    FORMATS,
    FieldKind,
    RequestedSchema,
    check_requested_schema,
    checked_schema,
    enum_options,
    field_kind,
    schema_digest,
    thaw,
)
from erlmcp_py.core.versions import LATEST_VERSION
from erlmcp_py.core.wording import (
    FORMAT_WORDS,
    TYPE_WORDS,
    choice_message,
    json_pointer,
    json_type,
    keyword_message,
    list_options,
    plural,
    value_facts,
)

__all__ = [
    "AnswerError",
    "CacheInfo",
    "CompiledValidator",
    "ValidationResult",
    "ValidatorCache",
    "cache_clear",
    "cache_info",
    "compile_validator",
    "format_checker",
    "json_type",
    "not_an_object",
    "problem_lines",
    "summarize",
    "validate_answer",
]


def format_checker(formats: Mapping[str, Callable[[str], bool]] = FORMATS) -> Any:
    """A jsonschema ``FormatChecker`` that knows exactly ``formats`` (by default the four MCP
    formats of :data:`~erlmcp_py.core.schema.FORMATS`).

    As JSON Schema says, a format applies to strings only: any other value passes it (the
    ``type`` keyword decides about it).
    """
    checker = FormatChecker(formats=())
    for name, check in formats.items():
        checker.checks(name)(lambda v, check=check: not isinstance(v, str) or check(v))
    return checker


_FORMAT_CHECKER: Final = format_checker()


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnswerError:
    """One reason an answer was not accepted. Never contains the submitted value (except
    what a form type's own validator chose to say in its message: application text, shown to
    the user and never logged).

    Attributes:
        field: The form field concerned, or ``None`` for a problem with the answer as a whole
            (not an object; unexpected fields; a model validator's refusal).
        constraint: The schema keyword that failed: ``type``, ``required``,
            ``additionalProperties``, ``minLength``, ``maxLength``, ``format``, ``minimum``,
            ``maximum``, ``enum``, ``oneOf`` (titled single-select), ``anyOf`` (an item of a
            titled multi-select), ``minItems``, ``maxItems``, ``uniqueItems``, or ``finite``
            (NaN or an infinity where a number was expected); ``model`` when a form type's
            own validator refused it (``expected`` is then pydantic's error type).
        expected: What the constraint wants, from the schema (never from the answer): the JSON
            type name; the bound; the format name; the tuple of allowed option values; the
            tuple of allowed field names (``additionalProperties``); ``True`` (``required``,
            ``uniqueItems``); ``"finite number"`` (``finite``).
        path: JSON pointer into the answer (``/age``, ``/colors/1``; ``""`` for the whole).
        message: One human-readable sentence for a re-prompt.
        actual_type: JSON type of the submitted value (``None`` when it is missing).
        actual_length: Length in code points when the value is a string.
        actual_items: Item count when the value is an array; for ``additionalProperties``
            the number of unexpected keys.
    """

    field: str | None
    constraint: str
    expected: str | int | float | bool | tuple[str, ...]
    path: str
    message: str
    actual_type: str | None = None
    actual_length: int | None = None
    actual_items: int | None = None


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """The outcome of :func:`validate_answer`.

    Attributes:
        ok: ``True`` when the answer is valid.
        content_with_defaults: When ``ok``, a new dict with the answer's fields in form order,
            defaults filled in for missing optional fields and integral floats of ``integer``
            fields turned into ``int``; ``None`` otherwise.
        errors: Why it is not valid (empty when ``ok``), in form field order.
    """

    ok: bool
    content_with_defaults: dict[str, Any] | None
    errors: tuple[AnswerError, ...] = ()

    @property
    def content(self) -> dict[str, Any] | None:
        """Alias of :attr:`content_with_defaults`."""
        return self.content_with_defaults

    @property
    def answer(self) -> Any:
        """What a valid answer becomes, the content of the ``Accepted`` outcome: the completed
        dict here; a typed form's result (:class:`~erlmcp_py.core.typeschema.FormType`) gives
        the instance of its type."""
        return self.content_with_defaults


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """Statistics of a :class:`ValidatorCache`."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def not_an_object(content: object) -> ValidationResult:
    """The refusal of an answer that is not a JSON object (it states only type facts)."""
    jt, length, items = value_facts(content)
    err = AnswerError(
        field=None,
        constraint="type",
        expected="object",
        path="",
        message=f"The answer must be an object of fields (got {jt}).",
        actual_type=jt,
        actual_length=length,
        actual_items=items,
    )
    return ValidationResult(False, None, (err,))


def summarize(
    errors: tuple[AnswerError, ...] | list[AnswerError], *, locale: str = DEFAULT_LOCALE
) -> str:
    """Render errors as a short text to put in a re-prompt (it contains no submitted value).

    Args:
        errors: The errors of a :class:`ValidationResult`.
        locale: The language of the heading (one of :data:`~erlmcp_py.core.i18n.LOCALES`);
            each error's line is its :attr:`AnswerError.message`, as the validator wrote it.

    Returns:
        One line per error under a heading, or a sentence saying the answer is valid.

    Raises:
        ValueError: ``locale`` is not one of the catalog's locales.
    """
    t = Texts(locale)
    if not errors:
        return t("mcp.answer.valid")
    return f"{t.count('mcp.answer.not_accepted', len(errors))}\n{problem_lines(errors)}"


def problem_lines(errors: tuple[AnswerError, ...] | list[AnswerError]) -> str:
    """One ``- message`` line per error (what a re-prompt lists under its own heading)."""
    return "\n".join(f"- {e.message}" for e in errors)


# --------------------------------------------------------------------------------------------
# Compiled validators
# --------------------------------------------------------------------------------------------


def _is_string(v: object) -> bool:
    return isinstance(v, str)


def _is_integer(v: object) -> bool:
    t = type(v)
    return t is int or (t is float and v.is_integer())  # type: ignore[attr-defined]


def _is_number(v: object) -> bool:
    t = type(v)
    return t is int or t is float


def _is_boolean(v: object) -> bool:
    return type(v) is bool


def _is_array(v: object) -> bool:
    return isinstance(v, list)


# The JSON Schema ``type`` keyword, with jsonschema's Draft 2020-12 semantics for decoded JSON
# (a bool is never a number; a float with an integral value is an integer). Checked natively:
# it is the costliest keyword to dispatch through jsonschema and it gates all the others.
_TYPE_CHECKS: Final = {
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
    "array": _is_array,
}


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kind: FieldKind
    json_type: str
    is_type: Callable[[object], bool]
    required: bool
    has_default: bool
    default: Any
    value_validator: Any  # Draft202012Validator | None: the field's keywords other than type
    item_validator: Any  # Draft202012Validator | None: a multi-select's item enum
    options: tuple[tuple[str, str | None], ...]


def _constraints(prop: Mapping[str, Any], kind: FieldKind) -> tuple[dict[str, Any], Any]:
    """The jsonschema keywords (besides ``type``) of a value, and of an item of a multi-select.

    A titled single-select's ``oneOf`` of ``{const, title}`` with unique string consts
    accepts exactly the ``enum`` of those consts; so does a titled multi-select's
    ``items.anyOf``. A multi-select also gets ``uniqueItems``: a choice is made once.
    """
    if kind in (FieldKind.MULTI_SELECT, FieldKind.TITLED_MULTI_SELECT):
        array = {k: prop[k] for k in ("minItems", "maxItems") if k in prop}
        array["uniqueItems"] = True
        return array, {"enum": [v for v, _ in enum_options(prop)]}
    if kind in (
        FieldKind.SINGLE_SELECT,
        FieldKind.LEGACY_SINGLE_SELECT,
        FieldKind.TITLED_SINGLE_SELECT,
    ):
        return {"enum": [v for v, _ in enum_options(prop)]}, None
    keys = ("minLength", "maxLength", "format", "minimum", "maximum")
    return {k: prop[k] for k in keys if k in prop}, None


def _jsonschema(leaf: dict[str, Any] | None) -> Any:
    if not leaf:
        return None
    return Draft202012Validator(leaf, format_checker=_FORMAT_CHECKER)


class CompiledValidator:
    """Validates answers to one requestedSchema. Build with :func:`compile_validator`.

    Attributes:
        schema: The checked, frozen requestedSchema.
        digest: Hex SHA-256 of its canonical JSON (the cache key).
        field_names: The form's fields, in order.
        required: The names of the required fields.
    """

    __slots__ = (
        "_fields",
        "digest",
        "field_names",
        "required",
        "schema",
    )

    def __init__(self, schema: Mapping[str, Any]) -> None:
        """Compile ``schema``; prefer :func:`compile_validator`, which caches.

        Raises:
            SchemaNotAllowed: ``schema`` is not an allowed requestedSchema.
        """
        frozen: RequestedSchema = checked_schema(schema, LATEST_VERSION)
        self.schema = frozen
        self.digest = frozen.digest
        required = frozenset(frozen.get("required", ()))
        fields = []
        for name, prop in frozen["properties"].items():
            kind = field_kind(prop)
            value_keywords, item_keywords = _constraints(prop, kind)
            fields.append(
                _Field(
                    name=name,
                    kind=kind,
                    json_type=prop["type"],
                    is_type=_TYPE_CHECKS[prop["type"]],
                    required=name in required,
                    has_default="default" in prop,
                    default=prop.get("default"),
                    value_validator=_jsonschema(value_keywords),
                    item_validator=_jsonschema(item_keywords),
                    options=enum_options(prop) if kind.value.endswith("select") else (),
                )
            )
        self._fields: tuple[_Field, ...] = tuple(fields)
        self.field_names: tuple[str, ...] = tuple(f.name for f in fields)
        self.required: frozenset[str] = required

    def __repr__(self) -> str:
        return f"<CompiledValidator {self.digest[:12]} fields={list(self.field_names)}>"

    def validate(self, content: object) -> ValidationResult:
        """Validate an answer's ``content``; see :func:`validate_answer`."""
        if not isinstance(content, Mapping):
            return not_an_object(content)
        errors: list[AnswerError] = []
        out: dict[str, Any] = {}
        missing = 0
        for f in self._fields:
            name = f.name
            if name in content:
                value = content[name]
                if _check_value(f, value, errors):
                    out[name] = _stored(f, value)
                continue
            missing += 1
            if f.required:
                errors.append(
                    AnswerError(
                        field=name,
                        constraint="required",
                        expected=True,
                        path=json_pointer(name),
                        message=f"{name}: is required.",
                    )
                )
            elif f.has_default:
                out[name] = thaw(f.default)
        extra = len(content) - (len(self._fields) - missing)  # keys that are not fields
        if extra:
            errors.append(
                AnswerError(
                    field=None,
                    constraint="additionalProperties",
                    expected=self.field_names,
                    path="",
                    message=(
                        f"The answer has {plural(extra, 'field')} that the form does not have "
                        f"(its fields: {', '.join(self.field_names)})."
                    ),
                    actual_type="object",
                    actual_items=extra,
                )
            )
        if errors:
            return ValidationResult(False, None, tuple(errors))
        return ValidationResult(True, out, ())


def _stored(f: _Field, value: Any) -> Any:
    """An accepted value of ``f`` as the completed answer holds it: an integral float of an
    ``integer`` field becomes an ``int``; a multi-select's list is copied."""
    if f.kind is FieldKind.INTEGER and type(value) is float:
        return int(value)
    if f.item_validator is not None:
        return list(value)
    return value


def _check_value(f: _Field, value: Any, errors: list[AnswerError]) -> bool:
    """Append ``f``'s errors for ``value``; return whether it is valid."""
    if not f.is_type(value):
        errors.append(_convert(f, "type", f.json_type, value, (f.name,), item=False))
        return False
    if type(value) is float and not math.isfinite(value):
        errors.append(
            AnswerError(
                field=f.name,
                constraint="finite",
                expected="finite number",
                path=json_pointer(f.name),
                message=f"{f.name}: must be a finite number.",
                actual_type="number",
            )
        )
        return False
    # Every failing keyword is reported: a multi-select with a repeated choice and a choice
    # that is not an option gets both errors (the array's, then each item's).
    before = len(errors)
    if f.value_validator is not None:
        errors.extend(
            _convert(f, e.validator, e.validator_value, value, (f.name,), item=False)
            for e in f.value_validator.iter_errors(value)
        )
    if f.item_validator is not None:
        for i, item in enumerate(value):
            where = (f.name, i)
            if not isinstance(item, str):
                errors.append(_convert(f, "type", "string", item, where, item=True))
                continue
            errors.extend(
                _convert(f, e.validator, e.validator_value, item, where, item=True)
                for e in f.item_validator.iter_errors(item)
            )
    return len(errors) == before


def _convert(
    f: _Field,
    keyword: str,
    expected: Any,
    value: object,
    where: tuple[str | int, ...],
    item: bool,
) -> AnswerError:
    jt, length, items = value_facts(value)
    exp: str | int | float | bool | tuple[str, ...] = expected
    if keyword == "type" and item:
        msg = choice_message(int(where[1]), "type", jt)
    elif keyword == "type":
        msg = f"must be {TYPE_WORDS.get(expected, expected)} (got {jt})"
    elif keyword == "enum":
        exp = tuple(v for v, _ in f.options)
        shown = list_options(f.options)
        msg = choice_message(int(where[1]), "enum", shown) if item else f"must be one of: {shown}"
        if f.kind is FieldKind.TITLED_SINGLE_SELECT:
            keyword = "oneOf"
        elif f.kind is FieldKind.TITLED_MULTI_SELECT:
            keyword = "anyOf"
    elif keyword == "format":
        msg = f"must be {FORMAT_WORDS.get(expected, expected)}"
    else:
        common = keyword_message(keyword, expected, length, items)
        if common is not None:
            msg = common
        else:  # pragma: no cover - the leaf schemas use no other keyword
            msg = f"does not satisfy {keyword}"
            exp = str(expected)
    return AnswerError(
        field=f.name,
        constraint=keyword,
        expected=exp,
        path=json_pointer(*where),
        message=f"{f.name}: {msg}.",
        actual_type=jt,
        actual_length=length,
        actual_items=items,
    )


# --------------------------------------------------------------------------------------------
# The cache
# --------------------------------------------------------------------------------------------


class ValidatorCache:
    """A bounded LRU of compiled validators keyed by schema digest. Thread-safe.

    The runtime's ValidatorActor may own one; the module functions use a shared default.
    """

    def __init__(self, maxsize: int = 256) -> None:
        """Create an empty cache holding at most ``maxsize`` validators."""
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self._maxsize = maxsize
        self._entries: OrderedDict[str, CompiledValidator] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def get(self, schema: Mapping[str, Any]) -> CompiledValidator:
        """Return the compiled validator of ``schema``, compiling it on a miss.

        Raises:
            SchemaNotAllowed: ``schema`` is not an allowed requestedSchema.
        """
        try:
            key = schema_digest(schema)
        except (TypeError, ValueError):  # not JSON (NaN, a set, ...): say where, as a check does
            check_requested_schema(schema, LATEST_VERSION)
            raise
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return found
        compiled = CompiledValidator(schema)
        with self._lock:
            self._misses += 1
            self._entries[key] = compiled
            self._entries.move_to_end(key)
            while len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)
        return compiled

    def info(self) -> CacheInfo:
        """Hits, misses, bound and current size."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, self._maxsize, len(self._entries))

    def clear(self) -> None:
        """Drop every entry and reset the statistics."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = 0


_DEFAULT_CACHE: Final = ValidatorCache()


def compile_validator(schema: Mapping[str, Any]) -> CompiledValidator:
    """Return the (cached) compiled validator of a requestedSchema.

    Args:
        schema: A requestedSchema. A :class:`~erlmcp_py.core.schema.FrozenDict` (see
            :func:`~erlmcp_py.core.schema.freeze`) is found without re-encoding it.

    Returns:
        The validator; the same object for equal schemas while it stays in the cache.

    Raises:
        SchemaNotAllowed: ``schema`` is not an allowed requestedSchema.
    """
    return _DEFAULT_CACHE.get(schema)


def cache_info() -> CacheInfo:
    """Statistics of the shared validator cache."""
    return _DEFAULT_CACHE.info()


def cache_clear() -> None:
    """Empty the shared validator cache."""
    _DEFAULT_CACHE.clear()


def validate_answer(
    schema: Mapping[str, Any] | CompiledValidator, content: object
) -> ValidationResult:
    """Validate the ``content`` of an accepted form answer, strictly.

    Args:
        schema: The requestedSchema that was sent (newest dialect, or its down-levelled form),
            or its :class:`CompiledValidator`.
        content: ``ElicitResult.content`` as decoded from JSON.

    Returns:
        ``ValidationResult(ok=True, content_with_defaults=..., errors=())`` or
        ``ValidationResult(ok=False, content_with_defaults=None, errors=(...))``.

    Raises:
        SchemaNotAllowed: ``schema`` is not an allowed requestedSchema.
    """
    validator = schema if isinstance(schema, CompiledValidator) else _DEFAULT_CACHE.get(schema)
    return validator.validate(content)
