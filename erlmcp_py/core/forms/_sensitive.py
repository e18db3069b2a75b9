"""Which fields of a form definition may never be asked in form mode.

MCP 2025-11-25 ("Security") requires URL mode for passwords, API keys, tokens, secrets and
payment credentials. The name list and its matching are the core's one detector
(:mod:`erlmcp_py.core.sensitive`); this module adds the form definition language's own
explicit signals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from erlmcp_py.core.sensitive import DEFAULT_SENSITIVE_NAMES, SensitiveNames, sensitive_name

if TYPE_CHECKING:
    from erlmcp_py.core.forms._fields import AnyField

__all__ = ["sensitive_name", "sensitive_reason"]

_SENSITIVE_AUTOCOMPLETE: Final = frozenset(
    {
        "current-password",
        "new-password",
        "one-time-code",
        "cc-number",
        "cc-csc",
        "cc-exp",
        "cc-exp-month",
        "cc-exp-year",
    }
)


def sensitive_reason(f: AnyField, names: SensitiveNames = DEFAULT_SENSITIVE_NAMES) -> str | None:
    """Why ``f`` may not be asked in form mode, or ``None``.

    Explicit signals always count: ``inputType: password``, a sensitive ``autocomplete`` token
    (``current-password``, ``cc-number`` ...), ``sensitive: true``. The name list
    (:func:`~erlmcp_py.core.sensitive.sensitive_name` on the id and the label) applies to
    free-form ``text`` and ``number`` fields and can be overridden with ``sensitive: false``.

    Args:
        f: A field definition.
        names: The name list (the server's policy; default: the documented list).

    Returns:
        A short reason, or ``None``.
    """
    if f.rendering.input_type == "password":
        return "its inputType is password"
    for token in (f.rendering.autocomplete or "").lower().split():
        if token in _SENSITIVE_AUTOCOMPLETE:
            return f"its autocomplete is {token}"
    if f.sensitive is True:
        return "it is marked sensitive"
    if f.sensitive is False or f.type not in ("text", "number"):
        return None
    for what, text in (("id", f.id), ("label", f.label)):
        term = names.match(text)
        if term is not None:
            return f"its {what} looks like {term!r}"
    return None
