"""Argument completion (``completion/complete``) for prompts and resource templates.

Theory of operation
-------------------
A request names a reference (``ref/prompt`` by name, ``ref/resource`` by URI template), one of
its arguments and the partial value typed so far. :meth:`CompletionRegistry.complete` checks the
reference and the argument exist, then asks, first that answers:

1. the completer registered for exactly that argument (``@server.completion(prompt=...,
   argument=...)`` or ``(resource_template=..., argument=...)``);
2. for a prompt argument typed ``Literal[...]``: its values that start with the partial value;
3. the server-wide completer (``@server.completion()``), if any;

and otherwise answers no values. A completer takes a :class:`CompletionRequest` and returns
strings (sync or async). At most :data:`MAX_VALUES` go on the wire, with ``total`` and
``hasMore`` telling the rest.

Pure apart from calling the registered completers.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from erlmcp_py.mcp._prompts import PromptSpec
    from erlmcp_py.mcp.resources import ResourceRegistry

__all__ = [
    "MAX_VALUES",
    "Completer",
    "CompletionRegistry",
    "CompletionRequest",
    "UnknownReference",
]

#: The most values one ``completion/complete`` result carries (the spec's limit).
MAX_VALUES: Final = 100

RefType = Literal["ref/prompt", "ref/resource"]


class UnknownReference(LookupError):
    """The prompt, template or argument named by a completion request does not exist."""


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """What a completer is asked.

    Attributes:
        ref_type: ``ref/prompt`` or ``ref/resource``.
        ref: The prompt name or the resource template.
        argument: The argument (or template variable) being completed.
        value: What the user typed so far.
        context: Values of the other arguments already chosen (``context.arguments``).
    """

    ref_type: RefType
    ref: str
    argument: str
    value: str
    context: Mapping[str, str] = field(default_factory=dict)


Completer = Callable[[CompletionRequest], Iterable[str] | Awaitable[Iterable[str]]]


class CompletionRegistry:
    """The completers of one server."""

    def __init__(self) -> None:
        self._by_argument: dict[tuple[RefType, str, str], Completer] = {}
        self.fallback: Completer | None = None

    def __bool__(self) -> bool:
        return bool(self._by_argument) or self.fallback is not None

    def add(
        self,
        fn: Completer,
        *,
        prompt: str | None = None,
        resource_template: str | None = None,
        argument: str | None = None,
    ) -> None:
        """Register ``fn`` for one argument, or (no keyword) for everything else.

        Raises:
            ValueError: both or only one of the reference and ``argument`` given, or a
                completer is already registered there.
        """
        if prompt is None and resource_template is None and argument is None:
            if self.fallback is not None:
                raise ValueError("a server-wide completer is already registered")
            self.fallback = fn
            return
        if (prompt is None) == (resource_template is None) or argument is None:
            raise ValueError(
                "give argument= and exactly one of prompt= or resource_template= "
                "(or nothing, for the server-wide completer)"
            )
        key: tuple[RefType, str, str] = (
            ("ref/prompt", prompt, argument)
            if prompt is not None
            else ("ref/resource", str(resource_template), argument)
        )
        if key in self._by_argument:
            raise ValueError(f"a completer for {key[1]!r} argument {argument!r} exists")
        self._by_argument[key] = fn

    def _choices(
        self,
        request: CompletionRequest,
        prompts: Mapping[str, PromptSpec],
        resources: ResourceRegistry,
    ) -> tuple[str, ...]:
        """Check the reference exists; the ``Literal`` values of a prompt argument, if any."""
        if request.ref_type == "ref/prompt":
            prompt = prompts.get(request.ref)
            if prompt is None:
                raise UnknownReference(f"Unknown prompt: {request.ref[:200]}")
            arg = prompt.argument(request.argument)
            if arg is None:
                raise UnknownReference(
                    f"Prompt {prompt.name!r} has no argument {request.argument[:200]!r}"
                )
            return arg.choices
        template = resources.templates.get(request.ref)
        if template is None:
            raise UnknownReference(f"Unknown resource template: {request.ref[:200]}")
        if request.argument not in template.template.variables:
            raise UnknownReference(
                f"Resource template {template.uri_template!r} has no variable "
                f"{request.argument[:200]!r}"
            )
        return ()

    async def complete(
        self,
        request: CompletionRequest,
        *,
        prompts: Mapping[str, PromptSpec],
        resources: ResourceRegistry,
    ) -> dict[str, Any]:
        """The ``completion/complete`` result for ``request``.

        Raises:
            UnknownReference: no such prompt, template or argument.
            TypeError: a completer returned something that is not strings.
            Exception: whatever a completer raised.
        """
        choices = self._choices(request, prompts, resources)
        completer = self._by_argument.get((request.ref_type, request.ref, request.argument))
        values: list[str]
        if completer is not None:
            values = await _run(completer, request)
        elif choices:
            values = [c for c in choices if c.startswith(request.value)]
        elif self.fallback is not None:
            values = await _run(self.fallback, request)
        else:
            values = []
        total = len(values)
        return {
            "completion": {
                "values": values[:MAX_VALUES],
                "total": total,
                "hasMore": total > MAX_VALUES,
            }
        }


async def _run(completer: Completer, request: CompletionRequest) -> list[str]:
    found = completer(request)
    if inspect.isawaitable(found):
        found = await found
    values = list(found)
    if not all(isinstance(v, str) for v in values):
        raise TypeError("a completer must return strings")
    return list(dict.fromkeys(values))  # unique, in order
