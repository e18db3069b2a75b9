"""Sensitive data detection: which fields may never be asked in form mode.

MCP 2025-11-25 ("Security") requires URL mode for passwords, API keys, tokens, secrets and
payment credentials. Separate because it is a policy of its own (a vocabulary and a name
heuristic) that compilation only consults.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from erlmcp_py.core.forms._fields import AnyField


def _terms(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Matched as whole words or runs of adjacent words, also in the plural ("API-Key" -> ["api",
# "key"] -> "apikey", "credentials" -> "credential"), so "Discard number" is no "cardnumber"
# and "Bypass code" no "passcode".
_SENSITIVE_COMPOUNDS: Final = _terms(
    """password passwd passphrase passcode passwort kennwort motdepasse contrasena wachtwoord
    apikey apisecret apitoken accesskey secretkey privatekey clientsecret authtoken accesstoken
    refreshtoken bearertoken idtoken sessiontoken credential creditcard cardnumber ccnumber
    securitycode socialsecurity"""
)
# Also matched inside a word ("userpassword"): they are part of no innocent word.
_SENSITIVE_ANYWHERE: Final = _terms(
    "password passwd passphrase passwort kennwort motdepasse contrasena wachtwoord credential"
)
# Matched only as whole words (not in the plural), so "max_tokens" and "pinned" stay allowed.
_SENSITIVE_WORDS: Final = frozenset(
    _terms("token secret secrets pwd pin ssn cvv cvc cvv2 cvc2 otp totp iban creds senha")
)
_SENSITIVE_AUTOCOMPLETE: Final = frozenset(
    _terms(
        """current-password new-password one-time-code cc-number cc-csc cc-exp cc-exp-month
    cc-exp-year"""
    )
)
_CAMEL_1: Final = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2: Final = re.compile(r"([A-Z]+)([A-Z][a-z])")
_NON_ALNUM: Final = re.compile(r"[^0-9a-z]+")
_DIGITS: Final = re.compile(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])")
_LONGEST: Final = max(map(len, _SENSITIVE_COMPOUNDS)) + 1


def _words(text: str) -> list[str]:
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    split = _CAMEL_2.sub(r"\1 \2", _CAMEL_1.sub(r"\1 \2", plain))
    split = _DIGITS.sub(" ", split.lower())
    return [w for w in _NON_ALNUM.split(split) if w]


def _runs(words: list[str]) -> set[str]:
    """Every run of adjacent words, joined, as long as the longest compound (plus a plural s)."""
    out: set[str] = set()
    for i in range(len(words)):
        joined = ""
        for w in words[i:]:
            joined += w
            if len(joined) > _LONGEST:
                break
            out.add(joined)
    return out


def sensitive_name(text: str) -> str | None:
    """Tell whether an id or label names sensitive data; return the matched term.

    The text is split into words (at separators, camelCase humps and digits; case and accents
    are dropped). Compound terms match a word or a run of adjacent words, also in the plural
    (``API-Key``, ``api_key``, ``apiKey`` and ``APIKEY`` all match ``apikey``; ``pass code``
    matches ``passcode`` but ``Bypass code`` does not); terms that are part of no innocent
    word (``password``, ``passwd``, ``credential`` ...) also match inside a word
    (``userpassword``); short terms (``token``, ``secret``, ``pin``, ``ssn``, ``cvv`` ...)
    must be whole words, so ``max_tokens`` or ``pinned`` do not match.

    Args:
        text: A field id or label.

    Returns:
        The matched term, or ``None``.
    """
    words = _words(text)
    runs = _runs(words)
    for term in _SENSITIVE_COMPOUNDS:
        if term in runs or term + "s" in runs:
            return term
        if term in _SENSITIVE_ANYWHERE and any(term in w for w in words):
            return term
    for word in words:
        if word in _SENSITIVE_WORDS:
            return word
    return None


def sensitive_reason(f: AnyField) -> str | None:
    """Why ``f`` may not be asked in form mode, or ``None``.

    Explicit signals always count: ``inputType: password``, a sensitive ``autocomplete`` token
    (``current-password``, ``cc-number`` ...), ``sensitive: true``. The name heuristic
    (:func:`sensitive_name` on the id and the label) applies to free-form ``text`` and
    ``number`` fields and can be overridden with ``sensitive: false``.

    Args:
        f: A field definition.

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
        term = sensitive_name(text)
        if term is not None:
            return f"its {what} looks like {term!r}"
    return None
