"""A tool's own time budget, whose clock pauses while a human is being asked.

A tool call may have a timeout for *its own* work. Time spent waiting on an elicitation is the
user's, not the tool's, so :class:`ToolClock` stops the clock while at least one elicitation of
the call is pending, and restarts it with the budget that was left when the last one ends.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import trio

__all__ = ["ToolClock"]


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

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Stop the clock for the duration of the block (nests; concurrent blocks count)."""
        if self.budget is not None and self._paused == 0:
            self._remaining = max(0.0, self.scope.deadline - trio.current_time())
            self.scope.deadline = math.inf
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1
            if self.budget is not None and self._paused == 0:
                self.scope.deadline = trio.current_time() + self._remaining
