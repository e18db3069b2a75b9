"""A tool's own time budget, whose clock pauses while a human is being asked.

A tool call may have a timeout for *its own* work. Time spent waiting on an elicitation is the
user's, not the tool's, so :class:`ToolClock` stops the clock while at least one elicitation of
the call is pending, and restarts it with the budget that was left when the last one ends.
:func:`run_tool` runs one tool call under its budget, for both protocol eras.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import trio

from erlmcp_py.mcp._tools import (
    ToolArgumentsError,
    ToolSpec,
    budget_exceeded,
    call_tool_fn,
    text_result,
)

__all__ = ["ToolClock", "run_tool"]


class ToolClock:
    """Drive the deadline of a tool call's cancel scope, pausing while humans are asked.

    Args:
        scope: The cancel scope around the tool call.
        budget: Seconds of tool time, or ``None`` for no limit.
    """

    __slots__ = ("_paused", "_remaining", "budget", "scope")

    def __init__(self, scope: trio.CancelScope, budget: float | None) -> None:
        self.scope = scope
        self.budget = budget
        self._paused = 0
        self._remaining = math.inf
        if budget is not None:
            scope.deadline = trio.current_time() + budget

    @property
    def paused(self) -> bool:
        """True while at least one elicitation of the call is pending."""
        return self._paused > 0

    def remaining(self) -> float:
        """Seconds of tool time left (``inf`` without a budget)."""
        if self.budget is None:
            return math.inf
        if self._paused:
            return self._remaining
        return max(0.0, self.scope.deadline - trio.current_time())

    def pause(self) -> _Pause:
        """Stop the clock for the duration of the ``with`` block (nests; concurrent blocks
        count)."""
        return _Pause(self)

    def _stop(self) -> None:
        if self.budget is not None and self._paused == 0:
            self._remaining = max(0.0, self.scope.deadline - trio.current_time())
            self.scope.deadline = math.inf
        self._paused += 1

    def _restart(self) -> None:
        self._paused -= 1
        if self.budget is not None and self._paused == 0:
            self.scope.deadline = trio.current_time() + self._remaining


class _Pause:
    """One :meth:`ToolClock.pause` block (a plain context manager: every question the tool
    asks enters one, and a generator-based one costs a generator and its wrapper each)."""

    __slots__ = ("_clock",)

    def __init__(self, clock: ToolClock) -> None:
        self._clock = clock

    def __enter__(self) -> None:
        self._clock._stop()

    def __exit__(self, *exc: object) -> None:
        self._clock._restart()


async def run_tool(
    spec: ToolSpec,
    arguments: dict[str, Any] | None,
    context: Callable[[ToolClock], object],
    log: Any,
) -> dict[str, Any]:
    """Run one tool call under its own time budget; its ``CallToolResult``.

    Bad arguments, the tool's own exception and a budget that runs out are ``isError``
    results.

    Args:
        spec: The tool.
        arguments: The call's ``arguments``.
        context: Builds the ``Context`` injected into the tool (when it takes one) from the
            call's clock.
        log: Where tool errors are logged.

    Raises:
        JsonRpcError, UrlElicitationRequired: from the tool, for the caller to answer as its
            protocol era says.
    """
    with trio.CancelScope() as budget:
        clock = ToolClock(budget, spec.timeout)
        try:
            kwargs = spec.bind(arguments)
        except ToolArgumentsError as exc:
            return text_result(str(exc), is_error=True)
        if spec.context_param is not None:
            kwargs[spec.context_param] = context(clock)
        return await call_tool_fn(spec, kwargs, log)
    return budget_exceeded(spec)  # only the clock cancels this scope
