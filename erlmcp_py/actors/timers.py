"""Many timers, one task: the deadlines and warnings of every pending elicitation.

Why not a cancel scope per elicitation? A parked child task inside a deadline scope costs
about 0.8 KB (the scope, its cancel status, trio's deadline bookkeeping) and a scope enter,
re-arm and exit per lifecycle; with 100 000 humans thinking, that is 80 MB and a hot path
dominated by trio internals. Here a pending elicitation costs one heap entry.

Theory of operation. :meth:`Timers.arm` pushes ``(when, key, target)`` onto a heap and
records ``when`` as the target's current timer (``target.timer_at``). Re-arming pushes a new
entry; the old one becomes *stale* and is skipped when it surfaces (lazy deletion), so arm is
O(log n) and disarming is free. The heap is rebuilt without stale entries whenever they
outnumber the live ones (amortised O(1) per arm), so memory stays proportional to what is
pending. :meth:`run` sleeps until the earliest entry (one cancel scope, whose deadline
:meth:`arm` pulls forward) and calls ``fire(target, now)`` for each due, current entry.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any, Protocol

import trio

__all__ = ["TimerTarget", "Timers"]


class TimerTarget(Protocol):
    """What a timer fires for: it remembers its one current timer (``None``: none)."""

    timer_at: float | None

    @property
    def timer_key(self) -> str:
        """A unique, orderable key (ties on ``when`` compare keys, never targets)."""
        ...


class Timers:
    """One heap of timers served by one task (:meth:`run`)."""

    __slots__ = ("_fire", "_heap", "_live", "_scope")

    def __init__(self, fire: Callable[[Any, float], None]) -> None:
        """``fire(target, now)`` is called for each target whose current timer is due."""
        self._fire = fire
        self._heap: list[tuple[float, str, Any]] = []
        self._live = 0  # targets with a current timer (the heap may hold more, stale)
        self._scope: trio.CancelScope | None = None

    def __len__(self) -> int:
        """Heap entries, stale ones included (for tests and metrics)."""
        return len(self._heap)

    @property
    def live(self) -> int:
        """Targets with a current timer."""
        return self._live

    def arm(self, target: TimerTarget, when: float) -> None:
        """Make ``when`` the target's one timer (replacing any previous one)."""
        if target.timer_at == when:
            return
        if target.timer_at is None:
            self._live += 1
        target.timer_at = when
        heapq.heappush(self._heap, (when, target.timer_key, target))
        if len(self._heap) > 2 * self._live + 64:
            self._compact()
        scope = self._scope
        if scope is not None and when < scope.deadline:
            scope.deadline = when  # wake the runner earlier

    def disarm(self, target: TimerTarget) -> None:
        """Drop the target's timer (its heap entry turns stale)."""
        if target.timer_at is not None:
            target.timer_at = None
            self._live -= 1

    def _compact(self) -> None:
        self._heap = [e for e in self._heap if e[2].timer_at == e[0]]
        heapq.heapify(self._heap)

    async def run(self) -> None:
        """Fire due timers forever (cancel the task to stop)."""
        while True:
            heap = self._heap  # _compact may have replaced it
            now = trio.current_time()
            while heap and heap[0][0] <= now:
                when, _key, target = heapq.heappop(heap)
                if target.timer_at != when:
                    continue  # stale: re-armed or disarmed since
                target.timer_at = None
                self._live -= 1
                self._fire(target, now)
                heap = self._heap
            with trio.CancelScope(deadline=heap[0][0] if heap else math.inf) as scope:
                self._scope = scope
                await trio.sleep_forever()
            self._scope = None
