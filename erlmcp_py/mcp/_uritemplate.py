"""RFC 6570 level-1 URI templates (``test://items/{id}/data``): parse, expand, match.

Level 1 has one kind of expression, ``{name}``: simple string expansion, where every character
of the value outside the unreserved set (``A-Z a-z 0-9 - . _ ~``) is percent-encoded. So an
expanded value never contains ``/``, ``?`` or ``#``, and matching a URI against a template is a
regular expression with one ``[^/?#]+`` group per variable (the value is percent-decoded).

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, unquote

__all__ = ["UriTemplate", "UriTemplateError"]

_EXPRESSION: Final = re.compile(r"\{([^{}]*)\}")
_VARNAME: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.]|%[0-9A-Fa-f]{2})*")
_UNRESERVED: Final = "-._~"


class UriTemplateError(ValueError):
    """The template is not an RFC 6570 level-1 template."""


@dataclass(frozen=True, slots=True)
class UriTemplate:
    """A parsed level-1 URI template.

    Create with :meth:`parse`.

    Attributes:
        template: The template as written.
        variables: The variable names, in order of appearance (each appears once).
    """

    template: str
    variables: tuple[str, ...]
    _pattern: re.Pattern[str]

    @classmethod
    def parse(cls, template: str) -> UriTemplate:
        """Parse ``template``.

        Raises:
            UriTemplateError: an unbalanced brace, an operator or modifier (levels 2-4), an
                invalid or repeated variable name, or no variable at all.
        """
        names: list[str] = []
        regex: list[str] = []
        pos = 0
        for m in _EXPRESSION.finditer(template):
            literal = template[pos : m.start()]
            if "{" in literal or "}" in literal:
                raise UriTemplateError(f"unbalanced brace in URI template {template!r}")
            regex.append(re.escape(literal))
            name = m.group(1)
            if not _VARNAME.fullmatch(name):
                raise UriTemplateError(
                    f"URI template {template!r}: {{{name}}} is not a level-1 expression "
                    "(one variable name, no operator, no modifier)"
                )
            if name in names:
                raise UriTemplateError(f"URI template {template!r}: {{{name}}} appears twice")
            names.append(name)
            regex.append(f"(?P<v{len(names) - 1}>[^/?#]+)")
            pos = m.end()
        tail = template[pos:]
        if "{" in tail or "}" in tail:
            raise UriTemplateError(f"unbalanced brace in URI template {template!r}")
        if not names:
            raise UriTemplateError(f"URI template {template!r} has no variable")
        regex.append(re.escape(tail))
        return cls(template, tuple(names), re.compile("".join(regex)))

    def expand(self, values: dict[str, str]) -> str:
        """The URI for ``values`` (each value percent-encoded as level 1 requires).

        Raises:
            KeyError: a variable has no value.
        """

        def one(m: re.Match[str]) -> str:
            return quote(str(values[m.group(1)]), safe=_UNRESERVED)

        return _EXPRESSION.sub(one, self.template)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` (percent-decoded), or ``None`` if it does not match."""
        m = self._pattern.fullmatch(uri)
        if m is None:
            return None
        return {name: unquote(m.group(f"v{i}")) for i, name in enumerate(self.variables)}
