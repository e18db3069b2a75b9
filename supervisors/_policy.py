"""Pure supervision policy: restart decisions, victim sets, restart intensity.

No trio here: time is an argument (the supervisor feeds ``trio.current_time()``), so every
rule is tested as a plain function. The rules follow OTP's ``supervisor`` module:

* ``permanent`` children are always restarted, ``transient`` ones only after an abnormal
  exit (a crash), ``temporary`` ones never.
* ``one_for_one`` restarts the failed child; ``one_for_all`` stops every other child (in
  reverse start order) and restarts them all in order; ``rest_for_one`` does the same for
  the failed child and the children started after it.
* Intensity is counted per supervisor, over *all* restarts: more than ``max_restarts`` within
  any ``max_seconds`` sliding window means the supervisor gives up and escalates.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence


class Restart(enum.StrEnum):
    """When a child is restarted after it exits."""

    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


class Strategy(enum.StrEnum):
    """Which children a supervisor restarts when one fails."""

    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


class ExitKind(enum.StrEnum):
    """How a child's task ended, as far as its supervisor can tell."""

    NORMAL = "normal"  # the start function returned
    CRASHED = "crashed"  # it raised an exception
    SHUTDOWN = "shutdown"  # the supervisor stopped it


def should_restart(restart: Restart, exit_kind: ExitKind) -> bool:
    """Whether a child that exited by itself must be restarted.

    A child the supervisor stopped on purpose (``SHUTDOWN``) is never restarted by this rule;
    group restarts are decided by :func:`victims`.
    """
    if exit_kind is ExitKind.SHUTDOWN:
        return False
    if restart is Restart.PERMANENT:
        return True
    if restart is Restart.TRANSIENT:
        return exit_kind is ExitKind.CRASHED
    return False


def victims(strategy: Strategy, order: Sequence[str], failed: str) -> list[str]:
    """The ids, in start order, that a restart for ``failed`` touches (``failed`` included).

    Args:
        strategy: the supervisor's strategy.
        order: every child id the supervisor holds, in start order.
        failed: the id of the child whose exit triggered the restart.

    Raises:
        ValueError: ``failed`` is not in ``order``.
    """
    index = list(order).index(failed)
    if strategy is Strategy.ONE_FOR_ONE:
        return [failed]
    if strategy is Strategy.ONE_FOR_ALL:
        return list(order)
    return list(order[index:])


class RestartIntensity:
    """Sliding-window restart counter: at most ``max_restarts`` in any ``max_seconds``.

    ``max_restarts=0`` means the first restart already exceeds the intensity (OTP semantics).
    """

    __slots__ = ("_stamps", "max_restarts", "max_seconds")

    def __init__(self, max_restarts: int, max_seconds: float) -> None:
        if max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, got {max_restarts}")
        if not max_seconds > 0:
            raise ValueError(f"max_seconds must be > 0, got {max_seconds}")
        self.max_restarts = max_restarts
        self.max_seconds = max_seconds
        self._stamps: deque[float] = deque()

    def add_restart(self, now: float) -> bool:
        """Record a restart at ``now``; return ``False`` when the intensity is exceeded."""
        self._stamps.append(now)
        horizon = now - self.max_seconds
        while self._stamps and self._stamps[0] <= horizon:
            self._stamps.popleft()
        return len(self._stamps) <= self.max_restarts

    def restarts_in_window(self, now: float) -> int:
        """How many restarts count against the intensity at ``now``."""
        horizon = now - self.max_seconds
        return sum(1 for t in self._stamps if t > horizon)
