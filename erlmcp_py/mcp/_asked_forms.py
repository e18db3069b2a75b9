"""The forms a tool's (or prompt's) code asks for, checked when it is registered.

A form that cannot be an MCP ``requestedSchema`` (an exclusive bound, a nested object, a type
with no wire form…) would otherwise fail the first call that asks it. At registration the
function's source is read: each ``<ctx>.elicit(message, FORM)`` call (``form=FORM`` too) whose
``FORM`` is a name, or a dotted name, that the function's module or closure binds is built the
way the call will build it (``schema_for`` for a type, the ``requestedSchema`` check for a
schema dict), and a refusal is a ``TypeError`` at the decorator, naming the tool, the line and
the problem. Forms made at run time (a type built in the call, a schema from a file) are
checked when they are asked, as before; a function whose source cannot be read (defined in a
REPL) is checked at its calls only.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import tokenize
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.core.sensitive import strip_sensitive_markers
from erlmcp_py.core.typeschema import schema_for

__all__ = ["check_asked_forms"]

_MISSING = object()


def check_asked_forms(kind: str, name: str, fn: Callable[..., Any], context_param: str) -> None:
    """Check every form ``fn`` asks through its ``context_param`` that is known now.

    Args:
        kind: ``"tool"`` or ``"prompt"`` (for the message).
        name: The tool's or prompt's wire name.
        fn: The function.
        context_param: The name of its injected ``Context`` parameter.

    Raises:
        TypeError: a form it asks cannot be sent; the message names the line and the problem.
    """
    for line, form in _asked_forms(fn, context_param):
        try:
            _check(form)
        except (TypeError, ValueError, SchemaNotAllowed) as exc:
            raise TypeError(
                f"{kind} {name!r} asks for a form that cannot be sent (line {line}): {exc}"
            ) from None


def _check(form: Any) -> None:
    """Build ``form`` as ``ctx.elicit`` will (types are compiled once and cached)."""
    if isinstance(form, type):
        schema_for(form)
    elif isinstance(form, Mapping) and "properties" in form:
        RequestedSchema(strip_sensitive_markers(form))


def _asked_forms(fn: Callable[..., Any], context_param: str) -> Iterator[tuple[int, Any]]:
    """``(line, form)`` of each ``<context_param>.elicit`` call whose form is bound now."""
    target = inspect.unwrap(fn)
    try:  # the source file may be gone, or not be where the code came from (exec)
        lines, first = inspect.getsourcelines(target)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError):
        return
    names = inspect.getclosurevars(target)
    scope = {**names.builtins, **names.globals, **names.nonlocals}
    local = set(target.__code__.co_varnames)  # bound by the call itself: not known now
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "elicit"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == context_param
        ):
            continue
        expression = node.args[1] if len(node.args) > 1 else None
        for keyword in node.keywords:
            if keyword.arg == "form":
                expression = keyword.value
        form = _bound(expression, target.__globals__, scope, local)
        if form is not _MISSING:
            yield first + node.lineno - 1, form


def _bound(
    expression: ast.expr | None,
    module: Mapping[str, Any],
    scope: Mapping[str, Any],
    local: set[str],
) -> Any:
    """The value a name or dotted name refers to now (``_MISSING`` for anything else, and
    for a name the function binds itself)."""
    path: list[str] = []
    while isinstance(expression, ast.Attribute):
        path.append(expression.attr)
        expression = expression.value
    if not isinstance(expression, ast.Name) or expression.id in local:
        return _MISSING
    value = scope.get(expression.id, module.get(expression.id, _MISSING))
    for attr in reversed(path):
        value = getattr(value, attr, _MISSING)
        if value is _MISSING:
            break
    return value
