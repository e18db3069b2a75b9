"""The string formats a requestedSchema may name (``email``, ``uri``, ``date``, ``date-time``)
and their predicates.

Pure: no I/O, no clock, no trio.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from datetime import date
from typing import Final

from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]
from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

__all__ = [
    "FORMATS",
    "check_format",
]


_U = "\u0080-\U0010ffff"  # non-ASCII: RFC 6531 (SMTPUTF8) local parts and IDN hosts
_ATEXT = rf"A-Za-z0-9!#$%&'*+/=?^_`{{|}}~{_U}-"
_DOT_ATOM = rf"[{_ATEXT}]+(?:\.[{_ATEXT}]+)*"
_QUOTED = rf'"(?:[\x20\x21\x23-\x5b\x5d-\x7e{_U}]|\\[\x20-\x7e])*"'
_LABEL = rf"[A-Za-z0-9{_U}](?:[A-Za-z0-9{_U}-]*[A-Za-z0-9{_U}])?"
_EMAIL_RE: Final = re.compile(
    rf"(?P<local>{_DOT_ATOM}|{_QUOTED})@"
    rf"(?:(?P<domain>{_LABEL}(?:\.{_LABEL})*)|\[(?P<literal>[^\[\]\\\s]+)\])"
)
_DATE_RE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _is_email(value: str) -> bool:
    m = _EMAIL_RE.fullmatch(value)
    if m is None or len(value) > 254 or len(m.group("local")) > 64:
        return False
    literal = m.group("literal")
    if literal is None:
        return len(m.group("domain")) <= 253
    try:
        if literal[:5].lower() == "ipv6:":
            ipaddress.IPv6Address(literal[5:])
        else:
            ipaddress.IPv4Address(literal)
    except ValueError:
        return False
    return True


def _is_uri(value: str) -> bool:
    # rfc3986_validator anchors with ``$``, which also matches before a trailing newline.
    return "\n" not in value and bool(validate_rfc3986(value, rule="URI"))


def _is_date(value: str) -> bool:
    if _DATE_RE.fullmatch(value) is None:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_date_time(value: str) -> bool:
    # RFC 3339 allows lower-case "t"/"z"; the validator's ``$`` anchor tolerates a final "\n".
    return "\n" not in value and bool(validate_rfc3339(value.upper()))


#: The only ``format`` values MCP allows, each with the predicate that enforces it.
FORMATS: Final[Mapping[str, Callable[[str], bool]]] = {
    "email": _is_email,
    "uri": _is_uri,
    "date": _is_date,
    "date-time": _is_date_time,
}


def check_format(fmt: str, value: str) -> bool:
    """Tell whether ``value`` is a valid ``fmt`` string.

    Args:
        fmt: One of :data:`FORMATS` (``email``, ``uri``, ``date``, ``date-time``).
        value: The string to check.

    Returns:
        ``True`` when ``value`` conforms. ``email`` is an RFC 5321 mailbox (dot-atom or quoted
        local part; host name or bracketed IP literal); ``uri`` an absolute RFC 3986 URI;
        ``date`` an RFC 3339 full-date; ``date-time`` an RFC 3339 date-time with offset.

    Raises:
        KeyError: ``fmt`` is not an allowed format.
    """
    return FORMATS[fmt](value)
