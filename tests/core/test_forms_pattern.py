"""ECMA-262 translation of a form field's ``pattern``: ranges next to class escapes, ECMA-only
syntax, ECMA semantics of ``\\s``, ``\\d`` and ``\\w``, and Python-only syntax refused at
definition time."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest

from erlmcp_py.core.errors import FormDefinitionError
from erlmcp_py.core.forms import CompiledForm, compile_form, validate_form_answer
from erlmcp_py.core.forms._pattern import ecma_pattern, translate

V = "2025-11-25"


def field(pattern: str) -> dict[str, Any]:
    return {"id": "t", "type": "text", "label": "T", "validation": {"pattern": pattern}}


def compiled(pattern: str) -> CompiledForm:
    return compile_form({"id": "f", "title": "A form", "fields": [field(pattern)]}, V)


def pattern_ok(pattern: str, value: str) -> bool:
    return validate_form_answer(compiled(pattern), {"t": value}).ok


def ecma_ok(pattern: str, value: str) -> bool:
    """The translation alone, without a form around it."""
    return re.compile(translate(pattern), re.ASCII).search(value) is not None


def refusal(pattern: str) -> str:
    """The definition-time problem for ``pattern`` (the form is refused)."""
    with pytest.raises(FormDefinitionError) as info:
        compiled(pattern)
    [msg] = [msg for loc, msg in info.value.problems if loc == "fields.0.validation"]
    assert msg.startswith("pattern is not a valid regular expression: ")
    return msg


# --- 1. a class escape as a range end: the - is a literal (Annex B) -----------------------------


@pytest.mark.parametrize(
    ("pattern", "matches", "rejects"),
    [
        (r"^[\s-x]$", [" ", "\u3000", "-", "x"], ["a", "w", "y"]),
        (r"^[a-\s]$", ["a", "-", " ", "\u00a0"], ["b", "x"]),
        (r"^[\d-z]$", ["0", "9", "-", "z"], ["a", "y"]),
        (r"^[%-\w]$", ["%", "-", "a", "_"], ["&", "+"]),
        (r"^[\s-\d]$", [" ", "-", "5"], ["a"]),
        (r"^[\S-x]$", ["a", "-", "x"], [" "]),
        (r"^[^\s-x]$", ["a", "y"], [" ", "-", "x"]),
        (r"^[a-c\s-x]$", ["a", "b", "c", " ", "-", "x"], ["d", "w"]),
    ],
)
def test_range_with_class_escape_end_is_a_union(
    pattern: str, matches: list[str], rejects: list[str]
) -> None:
    for value in matches:
        assert ecma_ok(pattern, value), value
    for value in rejects:
        assert not ecma_ok(pattern, value), value


def test_ordinary_ranges_still_ranges() -> None:
    assert pattern_ok(r"^[a-c]+$", "abc")
    assert not pattern_ok(r"^[a-c]+$", "-")
    assert pattern_ok(r"^[-a]+$", "-a")
    assert pattern_ok(r"^[a-]+$", "-a")
    assert pattern_ok(r"^[\x41-\x43]+$", "ABC")
    assert pattern_ok(r"^[\u0430-\u044f]+$", "привет")
    assert not pattern_ok(r"^[\u0430-\u044f]+$", "hello")
    with pytest.raises(re.error, match="out of order"):
        translate("[z-a]")


# --- 2a. ECMA-only syntax: translated -----------------------------------------------------------


def test_control_escapes() -> None:
    assert ecma_ok(r"^\cA\cz$", "\x01\x1a")
    assert ecma_ok(r"^[\cJ]$", "\n")
    assert not ecma_ok(r"^\cA$", "cA")
    with pytest.raises(re.error, match="must be followed by a letter"):
        translate(r"\c1")


def test_empty_and_negated_empty_classes() -> None:
    assert not ecma_ok(r"^a[]?b$", "a]b")
    assert ecma_ok(r"^a[]?b$", "ab")  # [] matches nothing, so [] ? is empty
    assert not ecma_ok(r"[]", "]")
    assert not ecma_ok(r"[]", "")
    assert ecma_ok(r"^[^]{3}$", "a\n\u2028")
    assert not ecma_ok(r"^[^]$", "ab")


def test_hex_and_unicode_escapes() -> None:
    assert pattern_ok(r"^\u0041\x42$", "AB")
    assert pattern_ok(r"^\u00e9$", "é")
    # without the u flag \u{..} is not a code point escape: u repeated (Annex B)
    assert ecma_ok(r"^\u{3}$", "uuu")
    assert not ecma_ok(r"^\u{3}$", "\x03")
    assert ecma_ok(r"^\x$", "x")  # \x without two hex digits is the letter


def test_brace_that_is_not_a_quantifier_is_literal() -> None:
    assert pattern_ok(r"^a{,3}$", "a{,3}")  # Python would read {0,3}
    assert not pattern_ok(r"^a{,3}$", "aa")
    assert pattern_ok(r"^a{2}$", "aa")
    assert pattern_ok(r"^a{2,}$", "aaaa")
    assert pattern_ok(r"^a{1,2}?$", "a")
    assert pattern_ok(r"^{x}$", "{x}")


def test_ecma_named_groups() -> None:
    assert ecma_ok(r"^(?<w>[a-z]+)-\k<w>$", "ab-ab")
    assert not ecma_ok(r"^(?<w>[a-z]+)-\k<w>$", "ab-cd")
    assert ecma_ok(r"^(?<=)a(?<!b)$", "a")  # lookbehinds are not named groups


def test_dot_excludes_every_line_terminator() -> None:
    assert pattern_ok(r"^a.b$", "a b")
    for terminator in "\n\r\u2028\u2029":
        assert not pattern_ok(r"^a.b$", f"a{terminator}b"), repr(terminator)
    assert pattern_ok(r"^a.b$", "a\u0085b")


def test_identity_escapes_and_punctuation() -> None:
    assert pattern_ok(r"^\/\-\.$", "/-.")
    assert pattern_ok(r"^a]b}$", "a]b}")
    assert pattern_ok(r"^[\b]$", "\b")  # \b in a class is backspace
    assert not pattern_ok(r"^[\b]$", "b")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Python's "possible nested set" FutureWarning
        assert ecma_ok(r"^[[]$", "[")
        assert ecma_ok(r"^[[&&~~||-]+$", "[&~|-")


# --- 2b. Python-only syntax: refused at definition time, with the reason -------------------------


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(?P<n>a)", "(?P<name>...) and (?P=name) are Python's"),
        (r"(?<n>a)(?P=n)", "(?P<name>...) and (?P=name) are Python's"),
        (r"(?i)abc", "inline flags"),
        (r"(?s:.)", "inline flags"),
        (r"(?>a+)b", "atomic groups"),
        (r"(?#note)a", "comments"),
        (r"(a)?(?(1)b|c)", "conditionals"),
        (r"a*+", "possessive"),
        (r"a++", "possessive"),
        (r"a?+", "possessive"),
        (r"a{2}+", "possessive"),
        (r"a**", "nothing to repeat"),
        (r"a*?+", "possessive"),
        (r"a???", "nothing to repeat"),
        (r"\Aabc", r"\A is not an ECMA-262 escape"),
        (r"abc\Z", r"\Z is not an ECMA-262 escape"),
        (r"abc\z", r"\z is not an ECMA-262 escape"),
        (r"[\A]", r"\A is not an ECMA-262 escape"),
        (r"\N{DIGIT ONE}", r"\N is not an ECMA-262 escape"),
        (r"\U0001F600", r"\U is not an ECMA-262 escape"),
        (r"\p{L}", r"\p is not an ECMA-262 escape"),
        (r"[\1]", "legacy octal"),
        (r"\01", "legacy octal"),
        ("abc\\", "cannot end with a backslash"),
        ("[abc", "unterminated character class"),
    ],
)
def test_python_only_syntax_is_refused(pattern: str, reason: str) -> None:
    assert reason in refusal(pattern)
    with pytest.raises(re.error):
        ecma_pattern(pattern)


def test_anchor_escapes_suggest_caret_and_dollar() -> None:
    assert "use ^ / $" in refusal(r"\Aabc\Z")


def test_lazy_quantifiers_and_lookarounds_still_work() -> None:
    assert pattern_ok(r"^a+?$", "aaa")
    assert pattern_ok(r"^a??b$", "b")
    assert pattern_ok(r"^(?:ab)*(?=c)c$", "ababc")
    assert not pattern_ok(r"^a(?!b)", "ab")
    assert pattern_ok(r"^(a)\1$", "aa")


@pytest.mark.parametrize(
    ("pattern", "matches", "rejects"),
    [
        (r"^[\s-x]$", [" ", "-", "x", "\u00a0"], ["w", "y"]),
        (r"^[a-\d]$", ["a", "-", "7"], ["b"]),
        ("^a[]?$", ["a"], ["ab"]),
        ("^[^]$", ["\n", "z"], ["", "zz"]),
        (r"^\cA$", ["\x01"], ["A"]),
        (r"^\u{3}$", ["uuu"], ["u{3}"]),
        (r"^(?<n>a)\k<n>$", ["aa"], ["ab"]),
    ],
)
def test_ecma_syntax_python_rejects_works_in_forms(
    pattern: str, matches: list[str], rejects: list[str]
) -> None:
    # Python's re rejects these as written; the form's schema check must not compile them raw
    for value in matches:
        assert pattern_ok(pattern, value), value
    for value in rejects:
        assert not pattern_ok(pattern, value), value


@pytest.mark.parametrize(
    "ws",
    [
        " ",
        "\t",
        "\n",
        "\v",
        "\f",
        "\r",
        "\u00a0",
        "\ufeff",
        "\u2028",
        "\u2029",
        "\u3000",
        "\u1680",
        "\u2003",
        "\u202f",
    ],
)
def test_pattern_backslash_s_is_ecma_whitespace(ws: str) -> None:
    assert pattern_ok(r"^a\sb$", f"a{ws}b")
    assert pattern_ok(r"^a[\s]b$", f"a{ws}b")
    assert pattern_ok(r"^a[x\s]b$", f"a{ws}b")
    assert not pattern_ok(r"^a\Sb$", f"a{ws}b")
    assert not pattern_ok(r"^a[\S]b$", f"a{ws}b")


@pytest.mark.parametrize("not_ws", ["x", "\u200b", "\u0085", "\u180e", "٣"])
def test_pattern_backslash_s_rejects_non_ecma_whitespace(not_ws: str) -> None:
    # U+200B (zero width space), U+0085 (NEL) and U+180E are not WhiteSpace/LineTerminator in
    # ECMA-262 (Python's str.isspace() says U+0085 is)
    assert not pattern_ok(r"^a\sb$", f"a{not_ws}b")
    assert pattern_ok(r"^a\Sb$", f"a{not_ws}b")
    assert pattern_ok(r"^a[^\s]b$", f"a{not_ws}b")


def test_pattern_digit_and_word_stay_ascii() -> None:
    assert pattern_ok(r"^\d$", "7")
    assert not pattern_ok(r"^\d$", "٣")
    assert pattern_ok(r"^\D$", "٣")
    assert not pattern_ok(r"^[\d]$", "٣")
    assert pattern_ok(r"^\w+$", "abc_9")
    assert not pattern_ok(r"^\w$", "é")
    assert pattern_ok(r"^\W$", "é")
    assert pattern_ok(r"^a\b", "a é")
    assert pattern_ok(r"^a\b", "aé")  # é is not a word character: a boundary
    assert not pattern_ok(r"^a\B", "aé")
    # escapes that are not classes pass through, in and out of a class
    assert pattern_ok(r"^\\s$", "\\s")
    assert pattern_ok(r"^[\]\s]+$", "] ]")
    assert pattern_ok(r"^x$", "x")
    assert not pattern_ok(r"^x$", "x\n")  # ECMA $: the very end only


def test_pattern_is_compiled_once() -> None:
    ecma_pattern.cache_clear()
    c = compiled("^q+$")
    misses = ecma_pattern.cache_info().misses
    for _ in range(3):
        assert validate_form_answer(c, {"t": "qq"}).ok
    info = ecma_pattern.cache_info()
    assert info.misses == misses == 1  # compiled when the definition was checked, then reused
    assert info.hits >= 3


def test_ecma_whitespace_is_ecma262_whitespace_and_line_terminators() -> None:
    import sys
    import unicodedata

    from erlmcp_py.core.forms._pattern import ECMA_WHITESPACE

    zs = {c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs"}
    assert zs | {0x09, 0x0B, 0x0C, 0xFEFF} | {0x0A, 0x0D, 0x2028, 0x2029} == ECMA_WHITESPACE


def test_pattern_negated_whitespace_in_classes() -> None:
    assert pattern_ok(r"^[^\s]+$", "ab\u200b")
    assert not pattern_ok(r"^[^\s]+$", "a\u00a0b")
    assert pattern_ok(r"^[^\S]+$", " \u3000\ufeff")
    assert not pattern_ok(r"^[^\S]+$", " x")
    assert pattern_ok(r"^[\S\s]{3}$", "a\u00a0\U0001f600")
