"""The answer checks JSON Schema cannot express, run on values of the field's type.

Date ranges, the URL policy of
:func:`erlmcp_py.core.urlpolicy.parse_url` (parsing only -- resolution belongs to the shell),
file extensions, and cross-field rules. Separate because each is native code, not schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TYPE_CHECKING, Any, Final

from erlmcp_py.core.errors import UnsafeURLError
from erlmcp_py.core.forms._conditions import _Plan
from erlmcp_py.core.forms._fields import (
    DateField,
    FileField,
    UrlField,
    _compare,
    _parse_moment,
)
from erlmcp_py.core.forms._messages import _error
from erlmcp_py.core.urlpolicy import parse_url
from erlmcp_py.core.validation import AnswerError
from erlmcp_py.core.wording import json_pointer

if TYPE_CHECKING:
    from erlmcp_py.core.forms._compile import CompiledForm


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


def _extra_errors(
    compiled: CompiledForm, p: _Plan, value: Any, wrong_type: Set[str] = frozenset()
) -> list[AnswerError]:
    """Every failing check JSON Schema cannot express, on a value of the field's type.

    Args:
        compiled: The form.
        p: The field.
        value: Its value (of the field's JSON type).
        wrong_type: JSON pointers of the parts of ``value`` whose type is wrong (a file's
            ``filename`` that is not text is not judged by its extension).
    """
    f = p.field
    errors: list[AnswerError] = []
    if isinstance(f, DateField):
        moment = _parse_moment(value, f.validation.format)
        for name, sign in (("minimum", -1), ("maximum", 1)):
            bound_text = getattr(f.validation, name)
            if moment is None or bound_text is None:
                continue
            bound = _parse_moment(bound_text, f.validation.format)
            if bound is not None and _compare(moment, bound) == sign:
                word = "on or after" if sign < 0 else "on or before"
                errors.append(_error(p, name, bound_text, value, f"must be {word} {bound_text}"))
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
            errors.append(_error(p, constraint, expected, value, f"{words} [{exc.reason}]"))
        else:
            if parsed.scheme not in f.validation.allowed_schemes:
                schemes = ", ".join(f.validation.allowed_schemes)
                errors.append(
                    _error(
                        p,
                        "allowedSchemes",
                        f.validation.allowed_schemes,
                        value,
                        f"must use {schemes} [scheme]",
                    )
                )
    elif isinstance(f, FileField) and f.validation.allowed_extensions is not None:
        name = value.get("filename")
        if (
            isinstance(name, str)
            and json_pointer(p.id, "filename") not in wrong_type
            and not name.lower().endswith(f.validation.allowed_extensions)
        ):
            allowed = ", ".join(f.validation.allowed_extensions)
            errors.append(
                _error(
                    p,
                    "allowedExtensions",
                    f.validation.allowed_extensions,
                    value,
                    f"the file name must end with one of: {allowed}",
                )
            )
    return errors


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
