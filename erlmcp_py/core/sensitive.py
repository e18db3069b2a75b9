"""Sensitive input: which questions may never be asked in form mode, however they are written.

The MCP specification (2025-11-25, "Security") forbids asking for passwords, API keys, tokens,
secrets or payment credentials in form mode: such a question goes through URL mode (the
server's hosted elicitation page) or is not asked at all. This module is the one detector for
all three ways of writing a form:

* a raw JSON schema (a ``requestedSchema`` dict, or pydantic's JSON schema of a type):
  :func:`schema_sensitive_fields`;
* a Python type (pydantic model, dataclass, TypedDict, bare type): :func:`type_sensitive_fields`,
  which reads pydantic's JSON schema of the type, where ``SecretStr``/``SecretBytes`` fields
  carry ``format: password`` and ``writeOnly: true``;
* a form of the form definition language: ``core/forms`` asks :func:`sensitive_name` about each
  field's id and label.

Signals, in order:

1. explicit and final: ``"x-sensitive": true`` or ``false`` on a property (pydantic:
   ``Field(json_schema_extra={"x-sensitive": False})``; forms: ``sensitive: true|false``);
2. the type says so: ``"format": "password"``, ``"writeOnly": true`` (``SecretStr``,
   ``SecretBytes``);
3. the name: the property's key or ``title`` matches a term of :class:`SensitiveNames`.

The name list is documented below (:data:`DEFAULT_SENSITIVE_NAMES`) and overridable by the
server's policy (``RuntimeConfig.sensitive_names`` adds terms, ``not_sensitive_names`` removes
them). Pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pydantic

from erlmcp_py.core.typeschema import FormType

__all__ = [
    "DEFAULT_SENSITIVE_NAMES",
    "SENSITIVE_MARKER",
    "SensitiveField",
    "SensitiveNames",
    "schema_sensitive_fields",
    "sensitive_name",
    "strip_sensitive_markers",
    "form_type_sensitive_fields",
    "type_sensitive_fields",
]

#: The schema keyword that marks a property sensitive (``true``) or not (``false``); it never
#: reaches the wire (:func:`strip_sensitive_markers`).
SENSITIVE_MARKER: Final = "x-sensitive"


def _terms(text: str) -> tuple[str, ...]:
    return tuple(text.split())


@dataclass(frozen=True, slots=True)
class SensitiveNames:
    """The name list: terms that make a field sensitive when its id, key or title names them.

    Terms are tried in order; the first that matches is the one reported.

    A name is split into words (at separators, camelCase humps and digits; case and accents
    dropped). Three kinds of terms:

    Attributes:
        compounds: matched as a word or a run of adjacent words, also in the plural
            (``API-Key``, ``api_key``, ``apiKey``, ``APIKEY`` all name ``apikey``; ``card
            number`` names ``cardnumber``; ``Discard number`` does not).
        anywhere: also matched inside a word (``userpassword``): part of no innocent word.
        words: matched only as whole words, not in the plural (``token`` but not
            ``max_tokens``; ``pin`` but not ``pinned``).
    """

    compounds: tuple[str, ...]
    anywhere: tuple[str, ...]
    words: tuple[str, ...]

    def with_changes(self, add: Iterable[str] = (), remove: Iterable[str] = ()) -> SensitiveNames:
        """This list with terms added and removed (the server's policy).

        An added name (``"pin code"``, ``"vault-key"``, ``"iban"``) is normalised as a field
        name is (``pincode``, ``vaultkey``, ``iban``) and matched as a compound: as a word or
        a run of adjacent words, also in the plural. A removed name takes its normalised term
        out of all three kinds (removing ``token`` leaves ``apitoken`` and ``accesstoken``).
        """
        added = [t for t in (_norm(n) for n in add) if t and t not in self.compounds]
        removed = {t for t in (_norm(n) for n in remove) if t}
        return SensitiveNames(
            compounds=tuple(
                t for t in (*self.compounds, *dict.fromkeys(added)) if t not in removed
            ),
            anywhere=tuple(t for t in self.anywhere if t not in removed),
            words=tuple(t for t in self.words if t not in removed),
        )

    def match(self, text: str) -> str | None:
        """The term ``text`` names, or ``None`` (see the class docstring)."""
        return _match(self, text)

    def _match_words(self, text: str) -> str | None:
        words = _words(text)
        if not words:
            return None
        longest = max(map(len, self.compounds), default=0) + 1
        runs = _runs(words, longest)
        for term in self.compounds:
            if term in runs or term + "s" in runs:
                return term
        for term in self.anywhere:
            if any(term in w for w in words):
                return term
        for word in words:
            if word in self.words:
                return word
        return None


@functools.lru_cache(maxsize=4096)
def _match(names: SensitiveNames, text: str) -> str | None:
    # A form's field names are few and asked about on every question: each (list, name) is
    # split into words and matched once.
    return names._match_words(text)


#: The default name list (the names the MCP specification's examples use, their common
#: spellings, and a few other languages' words for "password").
DEFAULT_SENSITIVE_NAMES: Final = SensitiveNames(
    compounds=_terms(
        """password passwd passphrase passcode passwort kennwort motdepasse contrasena
        wachtwoord senha apikey apisecret apitoken accesskey secretkey privatekey clientsecret
        authtoken accesstoken refreshtoken bearertoken idtoken sessiontoken credential
        creditcard cardnumber ccnumber securitycode socialsecurity"""
    ),
    anywhere=_terms(
        "password passwd passphrase passwort kennwort motdepasse contrasena wachtwoord credential"
    ),
    words=_terms("token secret secrets pwd pin ssn cvv cvc cvv2 cvc2 otp totp iban creds"),
)

_CAMEL_1: Final = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2: Final = re.compile(r"([A-Z]+)([A-Z][a-z])")
_NON_ALNUM: Final = re.compile(r"[^0-9a-z]+")
_DIGITS: Final = re.compile(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])")


def _words(text: str) -> list[str]:
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    split = _CAMEL_2.sub(r"\1 \2", _CAMEL_1.sub(r"\1 \2", plain))
    split = _DIGITS.sub(" ", split.lower())
    return [w for w in _NON_ALNUM.split(split) if w]


def _norm(name: str) -> str:
    return "".join(_words(name))


def _runs(words: list[str], longest: int) -> set[str]:
    """Every run of adjacent words, joined, up to ``longest`` characters."""
    out: set[str] = set()
    for i in range(len(words)):
        joined = ""
        for w in words[i:]:
            joined += w
            if len(joined) > longest:
                break
            out.add(joined)
    return out


def sensitive_name(text: str, names: SensitiveNames = DEFAULT_SENSITIVE_NAMES) -> str | None:
    """Tell whether an id, key or label names sensitive data; return the matched term.

    Args:
        text: A field id, property key or label.
        names: The name list (default: :data:`DEFAULT_SENSITIVE_NAMES`).

    Returns:
        The matched term, or ``None``.
    """
    return names.match(text)


@dataclass(frozen=True, slots=True)
class SensitiveField:
    """A field that may not be asked in form mode, and why (never its value).

    Attributes:
        name: The property key (the field's wire name).
        reason: Why, e.g. ``its format is password`` or ``its name looks like 'apikey'``.
    """

    name: str
    reason: str

    def describe(self) -> str:
        """``field 'api_key' asks for sensitive data (its name looks like 'apikey')``."""
        return f"field {self.name!r} asks for sensitive data ({self.reason})"


def _alternatives(prop: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The property and the branches of its ``anyOf``/``oneOf`` (``Optional[SecretStr]``)."""
    out = [prop]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = prop.get(key)
        if isinstance(branches, list):
            out.extend(b for b in branches if isinstance(b, Mapping))
    return out


def _property_reason(key: str, prop: Mapping[str, Any], names: SensitiveNames) -> str | None:
    marker = prop.get(SENSITIVE_MARKER)
    if marker is True:
        return f"it is marked {SENSITIVE_MARKER}"
    if marker is False:
        return None
    for alt in _alternatives(prop):
        if alt.get("format") == "password":
            return "its format is password"
        if alt.get("writeOnly") is True:
            return "it is writeOnly"
    if prop.get("type") not in (None, "string", "number", "integer"):
        return None  # a boolean, a choice or a list names no secret the user types
    if any("enum" in alt or "const" in alt for alt in _alternatives(prop)):
        return None
    term = names.match(key)
    if term is not None:
        return f"its name looks like {term!r}"
    title = prop.get("title")
    if isinstance(title, str):
        term = names.match(title)
        if term is not None:
            return f"its title looks like {term!r}"
    return None


def schema_sensitive_fields(
    schema: Mapping[str, Any], names: SensitiveNames = DEFAULT_SENSITIVE_NAMES
) -> tuple[SensitiveField, ...]:
    """The sensitive properties of an object schema (a ``requestedSchema`` or a JSON schema).

    Args:
        schema: An object schema with ``properties``; a non-object schema (a bare
            ``SecretStr``'s) is read as the single property ``value``.
        names: The name list.

    Returns:
        One :class:`SensitiveField` per sensitive property, in schema order.
    """
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        if schema.get("type") == "object":
            return ()
        props = {"value": schema}
    out = []
    for key, prop in props.items():
        if isinstance(key, str) and isinstance(prop, Mapping):
            reason = _property_reason(key, prop, names)
            if reason is not None:
                out.append(SensitiveField(key, reason))
    return tuple(out)


def strip_sensitive_markers(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without the detector's own keywords on its properties (``x-sensitive``,
    ``writeOnly`` and ``format: password``), which the wire subset does not carry."""
    out = dict(schema)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        clean: dict[str, Any] = {}
        for key, prop in props.items():
            if isinstance(prop, Mapping):
                prop = {
                    k: v
                    for k, v in prop.items()
                    if k not in (SENSITIVE_MARKER, "writeOnly")
                    and not (k == "format" and v == "password")
                }
            clean[key] = prop
        out["properties"] = clean
    return out


_TYPE_CACHE: dict[Any, Mapping[str, Any] | None] = {}


def _json_schema_of(tp: Any) -> Mapping[str, Any] | None:
    """pydantic's JSON schema of ``tp`` (cached per type), or ``None`` when it has none."""
    try:
        return _TYPE_CACHE[tp]
    except KeyError:
        pass
    except TypeError:  # unhashable: not cached
        return _render_json_schema(tp)
    return _TYPE_CACHE.setdefault(tp, _render_json_schema(tp))


def _render_json_schema(tp: Any) -> Mapping[str, Any] | None:
    try:
        if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
            return tp.model_json_schema()
        return pydantic.TypeAdapter(tp).json_schema()
    except Exception:  # no JSON schema (an arbitrary class): only the form's own names count
        return None


def type_sensitive_fields(
    tp: Any,
    wire_schema: Mapping[str, Any],
    names: SensitiveNames = DEFAULT_SENSITIVE_NAMES,
) -> tuple[SensitiveField, ...]:
    """The sensitive fields of a form written as a Python type.

    Reads pydantic's JSON schema of ``tp`` (``SecretStr``/``SecretBytes`` give ``format:
    password`` and ``writeOnly``; ``Field(json_schema_extra={"x-sensitive": ...})`` gives the
    marker; keys are the wire names), and the wire schema the type renders to, for its names.

    Args:
        tp: The type (pydantic model, dataclass, TypedDict or bare type).
        wire_schema: Its ``requestedSchema`` (``schema_for(tp).schema``).
        names: The name list.
    """
    js = _json_schema_of(tp)
    wire_props = wire_schema.get("properties")
    if not isinstance(wire_props, Mapping):
        return ()
    js_props: Mapping[str, Any] = {}
    if js is not None:
        found = js.get("properties")
        js_props = found if isinstance(found, Mapping) else {"value": js}
    out = []
    for key, wire_prop in wire_props.items():
        own = js_props.get(key)
        merged = dict(wire_prop)
        if isinstance(own, Mapping):
            merged.update({k: own[k] for k in (SENSITIVE_MARKER, "writeOnly", "anyOf") if k in own})
            if own.get("format") == "password":
                merged["format"] = "password"
        reason = _property_reason(key, merged, names)
        if reason is not None:
            out.append(SensitiveField(key, reason))
    return tuple(out)


def form_type_sensitive_fields(
    form: FormType[Any], names: SensitiveNames = DEFAULT_SENSITIVE_NAMES
) -> tuple[SensitiveField, ...]:
    """:func:`type_sensitive_fields` of a form written as a Python type (its type and its
    schema), decided once per (form type, name list): both are immutable, and a tool asks
    the same form on every call.

    Args:
        form: The form type (:func:`~erlmcp_py.core.typeschema.schema_for`).
        names: The name list.
    """
    return _form_type_fields(form, names)


@functools.lru_cache(maxsize=1024)
def _form_type_fields(form: FormType[Any], names: SensitiveNames) -> tuple[SensitiveField, ...]:
    return type_sensitive_fields(form.type, form.schema, names)
