"""ECMA-262 semantics for a form's ``pattern`` (JSON Schema's regular expressions are ECMA's).

Separate because both the JSON Schema ``pattern`` keyword of the compiled schemas and the
definition checks use it, and because the translation is easiest to review alone.

Python's ``re`` differs from an ECMA-262 regular expression without flags in:

* ``$`` -- Python's also matches before a final newline; ECMA's only at the very end. It is
  rewritten ``\\Z`` outside character classes.
* ``\\d``, ``\\w``, ``\\b`` (and ``\\D``, ``\\W``, ``\\B``) -- ASCII in ECMA, Unicode in
  Python: the pattern is compiled with :data:`re.ASCII`, which makes exactly these (and
  ``\\s``, and case folding, which an ECMA pattern without flags does not do) ASCII.
* ``\\s``/``\\S`` -- ECMA's ``\\s`` is WhiteSpace (TAB, VT, FF, ZWNBSP U+FEFF, and every
  ``Zs`` space separator: U+0020, U+00A0, U+1680, U+2000-U+200A, U+202F, U+205F, U+3000) plus
  LineTerminator (LF, CR, U+2028, U+2029), neither ASCII (:data:`re.ASCII`) nor Python's
  Unicode ``\\s`` (which adds U+001C-U+001F and U+0085). Both are rewritten as explicit sets
  of ranges (``\\S`` as the complement), valid inside and outside a character class.
* A class escape as a range end (``[\\s-x]``, ``[a-\\d]``) -- ECMA (Annex B) makes the ``-``
  a literal; Python rejects it. Translated as the union of both ends and ``-``.
* ``.`` -- ECMA's excludes every LineTerminator (LF, CR, U+2028, U+2029), Python's only LF.
* ``[]`` matches nothing and ``[^]`` any character in ECMA; in Python ``]`` there is a literal.
* ``\\cA``-``\\cZ`` (control characters) and ``\\uHHHH`` are translated; a ``\\x``/``\\u``
  without its hex digits is the letter (Annex B; ``\\u{3}`` is ``uuu``), a ``{`` that does not
  open a quantifier is a literal (so ``a{,3}`` is literal, not Python's ``{0,3}``), and
  ``(?<name>...)`` / ``\\k<name>`` become Python's named groups.
* Refused with :class:`re.error` (the message says why): Python-only syntax -- ``(?P...)``,
  inline flags ``(?i)``, atomic groups, possessive quantifiers, comments, conditionals -- and
  escapes of other letters (``\\A``, ``\\Z``, ``\\z``, ...: the letter itself in ECMA, an
  anchor or an error in Python), ``\\c`` without a letter, and octal escapes in a class.

Punctuation and class members are written out as ``\\UXXXXXXXX`` so Python's own syntax
(nested-set warnings for ``[[``, ``&&``, ``--``) never applies in the translation. Compiled
patterns are cached.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Final

# ECMA-262 WhiteSpace and LineTerminator code points (Zs as of Unicode 14, Python 3.11's).
ECMA_WHITESPACE: Final = frozenset(
    [
        *(0x09, 0x0B, 0x0C, 0xFEFF),  # TAB VT FF ZWNBSP
        *(0x0A, 0x0D, 0x2028, 0x2029),  # LineTerminator
        *(0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000),  # Zs
    ]
)


def _ranges(points: list[int]) -> str:
    """``points`` (sorted) as the inside of a character class: ``\\x{..}-\\x{..}`` ranges."""
    out: list[str] = []
    i = 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        lo, hi = points[i], points[j]
        out.append(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}")
        i = j + 1
    return "".join(out)


def _complement_ranges(points: frozenset[int]) -> str:
    out: list[str] = []
    lo = 0
    for p in sorted(points):
        if p > lo:
            out.append(f"\\U{lo:08x}" if p - 1 == lo else f"\\U{lo:08x}-\\U{p - 1:08x}")
        lo = p + 1
    out.append(f"\\U{lo:08x}-\\U{sys.maxunicode:08x}")
    return "".join(out)


_SPACE: Final = _ranges(sorted(ECMA_WHITESPACE))
_NOT_SPACE: Final = _complement_ranges(ECMA_WHITESPACE)


_SETS: Final = {
    "s": f"[{_SPACE}]",
    "S": f"[{_NOT_SPACE}]",
    "d": r"\d",
    "D": r"\D",
    "w": r"\w",
    "W": r"\W",
}
_CLASS_SETS: Final = {"s": _SPACE, "S": _NOT_SPACE, "d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W"}
_CONTROL: Final = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
#: ECMA ``.`` without the ``s`` flag: anything but a LineTerminator (Python's only excludes LF).
_DOT: Final = r"[^\n\r\u2028\u2029]"
_HEX4: Final = re.compile(r"[0-9A-Fa-f]{4}")
_HEX2: Final = re.compile(r"[0-9A-Fa-f]{2}")
_QUANTIFIER: Final = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_GROUP_NAME: Final = re.compile(r"<([^>]*)>")


class _Refused(Exception):
    """Raised inside :func:`translate`; becomes a :class:`re.error` with the position."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def _char(code: int) -> str:
    """A literal code point, written so that no ``re`` syntax (in or out of a class) applies."""
    return f"\\U{code:08x}"


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str | None, int, int]:
    """The escape at ``pattern[i]`` (a backslash): (set, -1, end) or (None, code point, end).

    The set is Python text for a class escape (``\\s`` ...); valid inside a class when
    ``in_class``. Escapes outside a class that are not atoms (``\\b``, backreferences) are
    handled by :func:`translate` before this is called.
    """
    if i + 1 >= len(pattern):
        raise _Refused("a pattern cannot end with a backslash", i)
    c = pattern[i + 1]
    if c in _SETS:
        return (_CLASS_SETS[c] if in_class else _SETS[c]), -1, i + 2
    if c in _CONTROL:
        return None, _CONTROL[c], i + 2
    if c == "b" and in_class:
        return None, 0x08, i + 2  # backspace inside a class
    if c == "0" and not pattern[i + 2 : i + 3].isdigit():
        return None, 0, i + 2
    if c.isdigit():
        raise _Refused(
            f"\\{pattern[i + 1 : i + 3]} is a legacy octal escape here (not a backreference) in "
            "ECMA-262; write \\xHH or \\uHHHH",
            i,
        )
    if c == "c":
        letter = pattern[i + 2 : i + 3]
        if letter.isascii() and letter.isalpha():
            return None, ord(letter) % 32, i + 3
        raise _Refused("\\c must be followed by a letter A-Z or a-z (a control escape)", i)
    if c == "x":
        if _HEX2.match(pattern, i + 2):
            return None, int(pattern[i + 2 : i + 4], 16), i + 4
        return None, ord("x"), i + 2  # ECMA (Annex B): a lone \x is the letter x
    if c == "u":
        if _HEX4.match(pattern, i + 2):
            return None, int(pattern[i + 2 : i + 6], 16), i + 6
        return None, ord("u"), i + 2  # ECMA without the u flag: \u{..} is u repeated
    if c.isascii() and c.isalpha():
        raise _Refused(
            f"\\{c} is not an ECMA-262 escape (without flags it would match the letter {c!r}, "
            "while Python's re gives it another meaning or rejects it); write the letter itself"
            + (" or use ^ / $ for the start / end" if c in "AZzG" else ""),
            i,
        )
    return None, ord(c), i + 2  # identity escape: the character itself


def _class(pattern: str, i: int) -> tuple[str, int]:
    """The character class opening at ``pattern[i]`` (``[``) as Python text, and its end."""
    start = i
    i += 1
    negated = pattern[i : i + 1] == "^"
    if negated:
        i += 1
    if pattern[i : i + 1] == "]":  # ECMA: [] matches nothing, [^] any character
        return ("(?s:.)" if negated else "(?!)"), i + 1
    # Atoms: (set text, -1) for a class escape, (None, code point) for a character.
    atoms: list[tuple[str | None, int]] = []
    while True:
        if i >= len(pattern):
            raise _Refused("unterminated character class", start)
        c = pattern[i]
        if c == "]":
            i += 1
            break
        if c == "\\":
            text, code, i = _escape(pattern, i, in_class=True)
            atoms.append((text, code))
        else:
            atoms.append((None, ord(c)))
            i += 1
    out: list[str] = []
    k = 0
    while k < len(atoms):
        text, code = atoms[k]
        is_range = k + 2 < len(atoms) and atoms[k + 1] == (None, ord("-"))
        if is_range:
            hi_text, hi_code = atoms[k + 2]
            if text is None and hi_text is None:
                if hi_code < code:
                    raise _Refused("range out of order in character class", start)
                out.append(f"{_char(code)}-{_char(hi_code)}")
            else:
                # ECMA (Annex B): a class escape as a range end makes the - a literal.
                out.append(text if text is not None else _char(code))
                out.append(_char(ord("-")))
                out.append(hi_text if hi_text is not None else _char(hi_code))
            k += 3
            continue
        out.append(text if text is not None else _char(code))
        k += 1
    return ("[^" if negated else "[") + "".join(out) + "]", i


def _group(pattern: str, i: int) -> tuple[str, int]:
    """The group opening at ``pattern[i]`` (``(``) as Python text, and where its body starts."""
    if pattern[i + 1 : i + 2] != "?":
        return "(", i + 1
    for ecma in ("(?:", "(?=", "(?!", "(?<=", "(?<!"):
        if pattern.startswith(ecma, i):
            return ecma, i + len(ecma)
    if pattern.startswith("(?<", i):
        name = _GROUP_NAME.match(pattern, i + 2)
        if name is None:
            raise _Refused("unterminated group name", i)
        return f"(?P<{name.group(1)}>", name.end()
    what = pattern[i : i + 3]
    reason = {
        "(?P": "(?P<name>...) and (?P=name) are Python's; "
        "ECMA-262 writes (?<name>...) and \\k<name>",
        "(?>": "atomic groups (?>...) are not ECMA-262",
        "(?#": "comments (?#...) are not ECMA-262",
        "(?(": "conditionals (?(...)...) are not ECMA-262",
    }.get(what, f"inline flags or modifiers ({what}...) are not ECMA-262 group syntax")
    raise _Refused(reason, i)


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    # 1: the last thing written was a quantifier; 2: a lazy one (its ? written too)
    quantified = 0
    while i < len(pattern):
        c = pattern[i]
        was_quantified, quantified = quantified, 0
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt in ("b", "B"):
                out.append("\\" + nxt)
                i += 2
            elif nxt.isdigit() and nxt != "0":
                digits = re.match(r"[0-9]+", pattern[i + 1 :])
                assert digits is not None
                out.append(f"(?:\\{digits.group()})")  # a backreference
                i += 1 + digits.end()
            elif nxt == "k" and pattern.startswith("<", i + 2):
                name = _GROUP_NAME.match(pattern, i + 2)
                if name is None:
                    raise _Refused("unterminated group name", i)
                out.append(f"(?P={name.group(1)})")
                i = name.end()
            else:
                text, code, i = _escape(pattern, i, in_class=False)
                out.append(text if text is not None else _char(code))
        elif c == "[":
            text, i = _class(pattern, i)
            out.append(text)
        elif c == "(":
            text, i = _group(pattern, i)
            out.append(text)
        elif c in "*+?{":
            quantifier = _QUANTIFIER.match(pattern, i) if c == "{" else None
            if c == "{" and quantifier is None:
                out.append(_char(ord("{")))  # ECMA (Annex B): not a quantifier, a literal
                i += 1
                continue
            if was_quantified and c == "+":
                raise _Refused("possessive quantifiers (*+, ++, ?+, {n}+) are not ECMA-262", i)
            if was_quantified and not (was_quantified == 1 and c == "?"):
                raise _Refused("nothing to repeat: a quantifier follows a quantifier", i)
            end = quantifier.end() if quantifier is not None else i + 1
            out.append(pattern[i:end])
            i = end
            quantified = 2 if was_quantified else 1
        elif c == "$":
            out.append(r"\Z")
            i += 1
        elif c == ".":
            out.append(_DOT)
            i += 1
        elif c in "])}":
            out.append(")" if c == ")" else _char(ord(c)))
            i += 1
        else:
            out.append(c if c in "|^" or c.isalnum() else _char(ord(c)))
            i += 1
    return "".join(out)


def translate(pattern: str) -> str:
    """``pattern`` (ECMA-262, no flags) as a Python pattern to compile with :data:`re.ASCII`.

    Raises:
        re.error: ``pattern`` uses syntax that is not ECMA-262 or that this translation does not
            support (the message says which and why).
    """
    try:
        return _translate(pattern)
    except _Refused as exc:
        raise re.error(exc.message, pattern, exc.pos) from None


@lru_cache(maxsize=256)
def ecma_pattern(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` with ECMA-262 semantics (see the module docstring); cached.

    Raises:
        re.error: the pattern is not a valid regular expression, or uses syntax that is not
            ECMA-262 or that :func:`translate` refuses.
    """
    return re.compile(translate(pattern), re.ASCII)
