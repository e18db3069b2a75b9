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

Compiled patterns are cached.
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


def translate(pattern: str) -> str:
    """``pattern`` (ECMA-262) as a Python pattern to compile with :data:`re.ASCII`."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            escape = pattern[i : i + 2]
            if escape in ("\\s", "\\S"):
                inside = _SPACE if escape == "\\s" else _NOT_SPACE
                out.append(inside if in_class else f"[{inside}]")
            else:
                out.append(escape)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "$":
            c = r"\Z"
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def ecma_pattern(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` with ECMA-262 semantics (see the module docstring); cached.

    Raises:
        re.error: the pattern is not a valid regular expression.
    """
    return re.compile(translate(pattern), re.ASCII)
