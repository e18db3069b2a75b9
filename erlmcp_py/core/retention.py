"""Bounded retention of terminal elicitation records, fed ``now``.

Theory of operation
-------------------

When an elicitation reaches a terminal status, the registry keeps its record for a while so
``get_elicitation_status`` still answers, then forgets it (erlmcp keeps them forever).
:class:`Retention` only tracks *which* ids to forget and when; the registry owns the records
and deletes the ids it is handed back.

Two bounds, whichever comes first (the policy defaults: 10 000 records or 15 minutes): at
most ``max_records`` ids, and none older than ``max_age_s``. Ids are kept in an
``OrderedDict`` (a linked list, so popping the front is O(1), unlike a plain dict), id -> time
it became terminal. Times are clamped to the highest ``now`` seen, so the map is always sorted
by time, oldest first, and both bounds are enforced by popping from the front: O(1) per add,
O(1) amortised per evicted id. A ``now`` that goes backwards counts as no time passing.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

from erlmcp_py.core.policy import RetentionPolicy

__all__ = ["Retention"]

K = TypeVar("K", bound=Hashable)


def _check_now(now: float) -> float:
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise ValueError(f"now must be a finite number of seconds, got {now!r}")
    return float(now)


class Retention(Generic[K]):
    """Which terminal ids to keep, by count and by age.

    Args:
        policy: ``max_records`` and ``max_age_s``; defaults to 10 000 records / 900 s.
    """

    __slots__ = ("_clock", "_entries", "_policy")

    def __init__(self, policy: RetentionPolicy | None = None) -> None:
        self._policy = policy if policy is not None else RetentionPolicy()
        self._entries: OrderedDict[K, float] = OrderedDict()
        self._clock = -math.inf  # the highest now seen

    @property
    def policy(self) -> RetentionPolicy:
        """The policy in force."""
        return self._policy

    def add(self, key: K, now: float) -> list[K]:
        """Record that ``key`` became terminal at ``now``, and apply both bounds.

        Adding a key that is already retained restarts its age.

        Args:
            key: The elicitation id.
            now: The shell's monotonic clock, in seconds.

        Returns:
            The ids evicted to respect the bounds, oldest first (never ``key`` itself).

        Raises:
            ValueError: ``now`` is not finite.
        """
        clock = self._advance(now)
        self._entries.pop(key, None)
        evicted = self._evict_aged(clock)
        self._entries[key] = clock
        while len(self._entries) > self._policy.max_records:
            oldest, _ = self._entries.popitem(last=False)
            evicted.append(oldest)
        return evicted

    def evict(self, now: float) -> list[K]:
        """Forget every id that has been terminal for ``max_age_s`` or longer at ``now``.

        Returns:
            The evicted ids, oldest first.

        Raises:
            ValueError: ``now`` is not finite.
        """
        return self._evict_aged(self._advance(now))

    def discard(self, key: K) -> bool:
        """Forget ``key`` now (e.g. its record was deleted for another reason).

        Returns:
            Whether ``key`` was retained.
        """
        return self._entries.pop(key, None) is not None

    def terminal_at(self, key: K) -> float | None:
        """When ``key`` became terminal (as clamped), or ``None`` if it is not retained."""
        return self._entries.get(key)

    def next_expiry(self) -> float | None:
        """When the oldest retained id ages out (``None`` if nothing is retained).

        The shell can sleep until then and call :meth:`evict`.
        """
        for terminal_at in self._entries.values():
            return terminal_at + self._policy.max_age_s
        return None

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        """Retained ids, oldest first."""
        return iter(self._entries)

    def __repr__(self) -> str:
        return (
            f"<Retention {len(self._entries)}/{self._policy.max_records} records,"
            f" max age {self._policy.max_age_s} s>"
        )

    # -- internals ---------------------------------------------------------------------

    def _advance(self, now: float) -> float:
        now = _check_now(now)
        if now > self._clock:
            self._clock = now
        return self._clock

    def _evict_aged(self, clock: float) -> list[K]:
        evicted: list[K] = []
        while self._entries:
            oldest, terminal_at = next(iter(self._entries.items()))
            if clock - terminal_at < self._policy.max_age_s:
                break
            self._entries.popitem(last=False)
            evicted.append(oldest)
        return evicted
