"""Shares of a bounded resource per principal that shed what is idle instead of refusing.

Theory of operation
-------------------
Principals (client addresses, token subjects) hold units of one resource: Streamable HTTP
sessions, suspended 2026-07-28 calls. Each principal may hold up to ``per_principal`` of
them and all principals together up to ``total``. A unit left idle by a client that went away
without saying so (most clients never DELETE their session) would otherwise keep its place
until a timeout, and lock its own principal, or everyone, out meanwhile. So when a principal
asks for one more unit, :meth:`Shares.admit` decides:

* below both caps: :class:`Admit`;
* at its own cap: :class:`Shed` its least recently used idle unit (scope ``"principal"``),
  else :class:`Refuse` (scope ``"principal"``): every unit it holds is busy;
* at the total cap: :class:`Shed` the least recently used idle unit of the principal holding
  the most among those holding an idle one (between principals holding as many, the unit
  used least recently of theirs), else :class:`Refuse` (scope ``"total"``).

What *idle* means belongs to the caller (a predicate on the unit, asked only at a cap), and
so does ending a shed unit: :meth:`Shares.admit` only decides. The caller removes the unit
(:meth:`Shares.remove`, which gives it back exactly once however many paths end it), ends it,
then adds the new one. A principal may be denied shedding at its own cap (``shed_own``),
leaving only the total cap to shed.

*Use order.* :meth:`Shares.touch` marks a unit used now; no clock is read: the order of use is
a sequence number. Each principal's units are kept in that order (an ``OrderedDict``, the
least recently used first), and principals are kept in buckets by how many units they hold,
so the heaviest are found without sorting every principal. Adding, touching and removing
cost O(1); deciding at a cap costs the scan for an idle unit, from the least recently used,
over the principals of the heaviest buckets that hold one.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

__all__ = ["Admission", "Admit", "Refuse", "Shares", "Shed"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Scope = Literal["principal", "total"]


@dataclass(frozen=True, slots=True)
class Admit:
    """Room for one more unit: add it."""


@dataclass(frozen=True, slots=True)
class Shed(Generic[K, V]):
    """End this idle unit (remove it first), then add the new one.

    Attributes:
        key: The unit's key.
        value: The unit.
        principal: Whose it is.
        scope: The cap that was reached: the asking principal's own (``"principal"``: the unit
            is its own) or the total (``"total"``).
    """

    key: K
    value: V
    principal: str
    scope: Scope


@dataclass(frozen=True, slots=True)
class Refuse:
    """No room, and nothing idle to shed.

    Attributes:
        scope: The cap that was reached (``"principal"`` or ``"total"``).
    """

    scope: Scope


Admission = Admit | Shed[K, V] | Refuse


class _Held(Generic[V]):
    __slots__ = ("principal", "used", "value")

    def __init__(self, principal: str, value: V, used: int) -> None:
        self.principal = principal
        self.value = value
        self.used = used


class Shares(Generic[K, V]):
    """Units of one resource by key, each held by a principal, within two caps.

    Args:
        per_principal: Units one principal may hold at once (``None``: no cap of its own,
            only ``total``).
        total: Units all principals may hold at once.
        shed_own: Whether a principal at its own cap sheds its own idle unit (else it is
            refused, and only the total cap sheds).

    Raises:
        ValueError: a cap below 1.
    """

    __slots__ = (
        "_buckets",
        "_by_principal",
        "_entries",
        "_uses",
        "per_principal",
        "shed_own",
        "total",
    )

    def __init__(self, per_principal: int | None, total: int, *, shed_own: bool = True) -> None:
        if (per_principal is not None and per_principal < 1) or total < 1:
            raise ValueError("per_principal and total must be at least 1")
        self.per_principal = per_principal
        self.total = total
        self.shed_own = shed_own
        self._entries: dict[K, _Held[V]] = {}
        self._by_principal: dict[str, OrderedDict[K, _Held[V]]] = {}
        # principals by how many units they hold: count -> principals (insertion-ordered)
        self._buckets: dict[int, dict[str, None]] = {}
        self._uses = itertools.count()

    # -- reading ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Units held, over all principals."""
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def get(self, key: K) -> V | None:
        """The unit under ``key``, if held."""
        held = self._entries.get(key)
        return held.value if held is not None else None

    def values(self) -> list[V]:
        """Every unit held (a list: safe to iterate while units are removed)."""
        return [held.value for held in self._entries.values()]

    def held(self, principal: str) -> int:
        """Units ``principal`` holds."""
        units = self._by_principal.get(principal)
        return len(units) if units is not None else 0

    def keys_of(self, principal: str) -> list[K]:
        """The keys of ``principal``'s units, the least recently used first."""
        return list(self._by_principal.get(principal, ()))

    @property
    def principals(self) -> int:
        """Principals holding at least one unit."""
        return len(self._by_principal)

    def principal_of(self, key: K) -> str | None:
        """Who holds the unit under ``key``."""
        held = self._entries.get(key)
        return held.principal if held is not None else None

    # -- changing --------------------------------------------------------------------------------

    def admit(self, principal: str, idle: Callable[[V], bool]) -> Admission[K, V]:
        """Whether ``principal`` may take one more unit, or which idle unit to shed first.

        Args:
            principal: Who asks.
            idle: Whether a unit may be ended now without losing work (asked only at a cap).

        Returns:
            :class:`Admit`, :class:`Shed` or :class:`Refuse` (see the module docstring).
        """
        if self._at_share(principal):
            if not self.shed_own:
                return Refuse("principal")
            own = self._least_recent_idle(principal, idle)
            if own is None:
                return Refuse("principal")
            key, held = own
            return Shed(key, held.value, principal, "principal")
        if len(self._entries) < self.total:
            return Admit()
        for count in sorted(self._buckets, reverse=True):
            best: tuple[K, _Held[V]] | None = None
            for holder in self._buckets[count]:
                found = self._least_recent_idle(holder, idle)
                if found is not None and (best is None or found[1].used < best[1].used):
                    best = found
            if best is not None:
                key, held = best
                return Shed(key, held.value, held.principal, "total")
        return Refuse("total")

    def add(self, principal: str, key: K, value: V, *, within_share: bool = True) -> None:
        """Hold ``value`` under ``key`` for ``principal``, used now. ``within_share=False``
        holds it past the principal's own cap (a unit that is no new work: only the total
        cap bounds it).

        Raises:
            ValueError: ``key`` is held already, or a cap would be exceeded (ask
                :meth:`admit` first and remove what it sheds).
        """
        if key in self._entries:
            raise ValueError("this key is held already")
        count = self.held(principal)
        if (within_share and self._at_share(principal)) or len(self._entries) >= self.total:
            raise ValueError("no room: admit() first, and remove the unit it sheds")
        held = _Held(principal, value, next(self._uses))
        self._entries[key] = held
        self._by_principal.setdefault(principal, OrderedDict())[key] = held
        self._move(principal, count, count + 1)

    def touch(self, key: K) -> None:
        """Mark the unit under ``key`` used now (nothing when it is not held)."""
        held = self._entries.get(key)
        if held is None:
            return
        held.used = next(self._uses)
        self._by_principal[held.principal].move_to_end(key)

    def remove(self, key: K) -> V | None:
        """Give back the unit under ``key``: the unit the first time, ``None`` after (or for a
        key never held), so whichever path ends a unit first releases it, once."""
        held = self._entries.pop(key, None)
        if held is None:
            return None
        units = self._by_principal[held.principal]
        del units[key]
        count = len(units)
        if not count:
            del self._by_principal[held.principal]
        self._move(held.principal, count + 1, count)
        return held.value

    # -- internals -------------------------------------------------------------------------------

    def _at_share(self, principal: str) -> bool:
        cap = self.per_principal
        return cap is not None and self.held(principal) >= cap

    def _least_recent_idle(
        self, principal: str, idle: Callable[[V], bool]
    ) -> tuple[K, _Held[V]] | None:
        for key, held in self._by_principal.get(principal, {}).items():
            if idle(held.value):
                return key, held
        return None

    def _move(self, principal: str, old: int, new: int) -> None:
        """Move ``principal`` from the bucket of ``old`` units to that of ``new``."""
        if old:
            bucket = self._buckets[old]
            del bucket[principal]
            if not bucket:
                del self._buckets[old]
        if new:
            self._buckets.setdefault(new, {})[principal] = None
